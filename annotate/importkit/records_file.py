"""The records file of an import (tasks.jsonl, FIRE JSON/JSONL, rows JSONL) read as a stream, never whole.

JSON Lines are read a chunk at a time and parsed line by line, with named caps on the length of a line and on the
number of lines (blank lines count too), so a small zip that inflates to gigabytes of newlines or one endless line
is refused after reading at most ``max_lines`` lines or ``max_line_bytes`` of one line, with memory to match.
A JSON list (FIRE's released files) is one document: it is read whole, up to ``max_text_bytes`` and ``max_lines``.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from collections.abc import Iterator
from typing import IO, Any

import orjson

from annotate.importkit.common import ImportReport, decode_text, parse_json_array
from annotate.importkit.sources import LIMITS, SourceError
from annotate.server.json_limits import DEPTH_MESSAGE, too_deep

CHUNK_BYTES = 1024**2
_WHITESPACE = b" \t\r\n"
_READ_ERRORS = (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, zlib.error)


def human_bytes(count: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count:,} bytes"


class _Chunks:
    """The stream a chunk at a time, stopping at ``max_text_bytes`` (read errors become a SourceError)."""

    def __init__(self, stream: IO[bytes], label: str):
        self.stream, self.label, self.total = stream, label, 0

    def read(self, size: int = CHUNK_BYTES) -> bytes:
        try:
            chunk = self.stream.read(size)
        except _READ_ERRORS as error:
            raise SourceError(f"{self.label} cannot be read ({error})") from None
        self.total += len(chunk)
        if self.total > LIMITS.max_text_bytes:
            raise SourceError(f"{self.label} is larger than {human_bytes(LIMITS.max_text_bytes)}; "
                              "split the batch into smaller files")
        return chunk


class _TooManyLines(Exception):
    """The line cap is reached: the file is refused as a whole (its first records are not checked)."""

    def report_to(self, report: ImportReport) -> None:
        report.add(LIMITS.max_lines + 1, None,
                   f"more than {LIMITS.max_lines:,} lines (blank lines count too); split the batch into smaller files")


def _too_long(size: int) -> str:
    cap, plain = LIMITS.max_line_bytes, f"{LIMITS.max_line_bytes:,} bytes"
    limit = plain if human_bytes(cap) == plain else f"{plain} ({human_bytes(cap)})"
    return f"the line is {size:,} bytes long; at most {limit} are allowed"


def load_records(data: IO[bytes] | bytes, report: ImportReport, *, label: str = "the file") -> list[tuple[int, Any]]:
    """(line, value) for every record of a JSON Lines file or a JSON list; problems go to the report."""
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    chunks = _Chunks(stream, label)
    try:
        return _load(chunks, report, label)
    except SourceError as error:
        report.add(None, None, str(error))
    except _TooManyLines as stop:
        stop.report_to(report)
    return []


def read_whole(stream: IO[bytes], report: ImportReport, *, label: str, count_lines: bool = True) -> bytes | None:
    """All of a file that cannot be read line by line (CSV, Parquet), within ``max_text_bytes`` and, for text,
    ``max_lines``; None (with the problem reported) past a cap."""
    chunks = _Chunks(stream, label)
    try:
        parts = _all_chunks([], chunks) if count_lines else [*iter(chunks.read, b"")]
    except SourceError as error:
        report.add(None, None, str(error))
        return None
    except _TooManyLines as stop:
        stop.report_to(report)
        return None
    return b"".join(parts)


def _load(chunks: _Chunks, report: ImportReport, label: str) -> list[tuple[int, Any]]:
    first = chunks.read()
    if first.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        report.add(None, None, f"{label} is UTF-16/UTF-32 text; save it as UTF-8")
        return []
    if b"\x00" in first[:8192]:
        line = first[: first.index(b"\x00")].count(b"\n") + 1
        report.add(line, None, f"{label} contains NUL bytes: it is binary or UTF-16, not UTF-8 text")
        return []
    if first.startswith(b"\xef\xbb\xbf"):
        first = first[3:]
    # Leading blank lines, read chunk by chunk (counted against the cap), then what the file starts with.
    skipped = 0
    start = first.lstrip(_WHITESPACE)
    while not start:
        skipped += first.count(b"\n")
        if skipped >= LIMITS.max_lines:
            raise _TooManyLines
        first = chunks.read()
        if not first:
            report.add(None, None, f"{label} is empty")
            return []
        start = first.lstrip(_WHITESPACE)
    skipped += first.count(b"\n", 0, len(first) - len(start))
    line_start = first.rfind(b"\n", 0, len(first) - len(start)) + 1
    if start[:1] == b"[":
        return _json_list(first[line_start:], skipped, chunks, report, label)
    return _json_lines(first[line_start:], skipped, chunks, report)


def _json_list(head: bytes, skipped: int, chunks: _Chunks, report: ImportReport, label: str):
    # The leading blank lines come back as bare newlines: line numbers in problems stay those of the file.
    parts = _all_chunks([b"\n" * skipped, head], chunks)
    text = decode_text(b"".join(parts), report, label=label)
    del parts
    return [] if text is None else parse_json_array(text, report)


def _all_chunks(parts: list[bytes], chunks: _Chunks) -> list[bytes]:
    """``parts`` and the rest of the stream, stopping as soon as there are more lines than the cap."""
    newlines = sum(part.count(b"\n") for part in parts)
    while newlines <= LIMITS.max_lines and (chunk := chunks.read()):
        parts.append(chunk)
        newlines += chunk.count(b"\n")
    last = next((part for part in reversed(parts) if part), b"\n")
    if newlines + (not last.endswith(b"\n")) > LIMITS.max_lines:
        raise _TooManyLines
    return parts


def _json_lines(head: bytes, skipped: int, chunks: _Chunks, report: ImportReport) -> list[tuple[int, Any]]:
    records: list[tuple[int, Any]] = []
    append, loads, decode_error = records.append, orjson.loads, orjson.JSONDecodeError
    for number, line in _lines(head, skipped, chunks, report):
        if too_deep(line):  # parsed, it would break the checks and writes that serialise it again
            report.add(number, None, f"invalid JSON: {DEPTH_MESSAGE}")
            continue
        try:
            append((number, loads(line)))
        except decode_error:
            _report_bad_line(number, line, report)
    return records


def _json_error(line: str) -> str:
    """The standard library's wording ("Unterminated string starting at ...") is the clearer one."""
    try:
        json.loads(line)
    except json.JSONDecodeError as error:
        return f"invalid JSON: {error.msg} (column {error.colno})"
    except RecursionError:
        return "invalid JSON: nested too deeply"
    return "invalid JSON (numbers too large, NaN, or invalid Unicode escapes)"


def _report_bad_line(number: int, line: bytes, report: ImportReport) -> None:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        report.add(number, None, f"the line is not valid UTF-8 (byte 0x{line[error.start]:02x} at column "
                   f"{error.start + 1}); it looks like Latin-1/Windows-1252 text — save the file as UTF-8")
        return
    if text.strip():  # a line of Unicode spaces only is blank, as before
        report.add(number, None, _json_error(text))


def _lines(head: bytes, number: int, chunks: _Chunks, report: ImportReport) -> Iterator[tuple[int, bytes]]:
    """(line number, line) for every non-blank line after line ``number``; a line longer than the cap is reported
    and skipped without being kept. Past the line cap, _TooManyLines."""
    max_line, max_lines = LIMITS.max_line_bytes, LIMITS.max_lines
    pending: list[bytes] = []  # the start of the current line, from earlier chunks
    pending_size = 0
    overlong = False  # the current line is past the cap: its remaining bytes are only counted
    chunk = head
    while chunk:
        pieces = chunk.split(b"\n")
        last = pieces.pop()  # the start of a line that ends in a later chunk (or at the end of the file)
        for piece in pieces:
            number += 1
            if number > max_lines:
                raise _TooManyLines
            if pending or overlong:
                size = pending_size + len(piece)
                piece = b"".join([*pending, piece]) if not overlong else b""
                pending, pending_size, was_overlong, overlong = [], 0, overlong, False
                if was_overlong or size > max_line:
                    report.add(number, None, _too_long(size))
                    continue
            elif len(piece) > max_line:
                report.add(number, None, _too_long(len(piece)))
                continue
            if piece.strip(_WHITESPACE):
                yield number, piece
        if last:
            pending_size += len(last)
            if pending_size > max_line:
                overlong, pending = True, []
            elif not overlong:
                pending.append(last)
        chunk = chunks.read()
    if pending or overlong:
        number += 1
        if number > max_lines:
            raise _TooManyLines
        if overlong:
            report.add(number, None, _too_long(pending_size))
        else:
            line = b"".join(pending)
            if line.strip(_WHITESPACE):
                yield number, line
