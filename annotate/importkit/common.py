"""Shared validation for every importer: problems and the report, limits, text decoding, JSON lists, typed
field reads. Zip and directory sources live in ``sources.py`` and are re-exported here; the records file is
streamed by ``records_file.py``.

Importers never stop at the first problem: they collect every ``line N, field F: what is wrong`` so an admin can
fix a file in one pass, and they write nothing unless the whole file is clean.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from annotate.importkit.fields import NUL_MESSAGE, Fields, json_type  # noqa: F401  (re-exported)
from annotate.importkit.sources import (  # noqa: F401  (re-exported for importers)
    LIMITS,
    DirSource,
    Source,
    SourceError,
    ZipSource,
    check_relative_path,
    open_source,
)

Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass(frozen=True, slots=True)
class Problem:
    line: int | None
    field: str | None
    message: str
    unit: str = "line"  # "row" for Parquet, where there are no lines

    def __str__(self) -> str:
        where = []
        if self.line is not None:
            where.append(f"{self.unit} {self.line}")
        if self.field:
            where.append(f"field {self.field}")
        return f"{', '.join(where)}: {self.message}" if where else self.message

    def as_dict(self) -> dict:
        return {"line": self.line, "field": self.field, "message": self.message, "text": str(self)}


@dataclass
class ImportReport:
    """What an import found and did. Serialisable (``as_dict``) for the job row, the API and the batch."""

    kind: str
    batch: str
    dry_run: bool = False
    status: str = "pending"  # invalid | dry_run | imported | unchanged
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    problem_total: int = 0
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    capacity: dict | None = None  # can the people who may work on the batch finish it (annotate.queue.capacity)

    @property
    def ok(self) -> bool:
        return self.problem_total == 0

    def add(self, line: int | None, field_name: str | None, message: str, *, unit: str = "line") -> None:
        self.problem_total += 1
        # Keep the report readable and bounded: the total still counts every problem.
        if len(self.problems) < LIMITS.max_reported_problems:
            self.problems.append(Problem(line, field_name, message, unit))

    def warn(self, message: str) -> None:
        if len(self.warnings) < LIMITS.max_reported_problems:
            self.warnings.append(message)

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[phase] = round(self.timings.get(phase, 0.0) + time.perf_counter() - start, 3)

    def summary(self) -> str:
        if self.status == "invalid":
            return f"{self.problem_total} problem(s) found; nothing was imported."
        counts = ", ".join(f"{value} {name}" for name, value in self.counts.items())
        head = {"dry_run": "Dry run: the file is valid, nothing was written",
                "unchanged": "Unchanged: the batch already holds this content",
                "imported": "Imported"}.get(self.status, self.status)
        return f"{head} ({counts})." if counts else f"{head}."

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "batch": self.batch,
            "dry_run": self.dry_run,
            "status": self.status,
            "summary": self.summary(),
            "counts": dict(self.counts),
            "problem_total": self.problem_total,
            "problems": [p.as_dict() for p in self.problems],
            "warnings": list(self.warnings),
            "capacity": self.capacity,
            "timings": dict(self.timings),
        }

    def render(self) -> str:
        """Plain text for the command line."""
        lines = [self.summary()]
        lines += [f"  {p}" for p in self.problems]
        if self.problem_total > len(self.problems):
            lines.append(f"  ... and {self.problem_total - len(self.problems)} more problem(s)")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: an import builds ~10 containers per record and hardly any cycles, and
    the collector's repeated passes over them cost more than parsing itself (2-3x on 100k records)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# --- text ---------------------------------------------------------------------------------------------------

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _locate_bad_utf8(data: bytes, report: ImportReport, label: str) -> None:
    """Name every line that is not UTF-8 (slow path, only when the file does not decode)."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as error:
            byte = raw[error.start]
            report.add(number, None, f"{label} is not valid UTF-8 (byte 0x{byte:02x} at column {error.start + 1}); "
                       "it looks like Latin-1/Windows-1252 text — save the file as UTF-8")


def decode_text(data: bytes, report: ImportReport, *, label: str = "the file") -> str | None:
    """UTF-8 text with or without a BOM; anything else is reported with the line it breaks on."""
    if not data.strip():
        report.add(None, None, f"{label} is empty")
        return None
    if data.startswith(_UTF16_BOMS) or data.startswith(b"\x00\x00\xfe\xff"):
        report.add(None, None, f"{label} is UTF-16/UTF-32 text; save it as UTF-8")
        return None
    if b"\x00" in data[:8192]:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        report.add(line, None, f"{label} contains NUL bytes: it is binary or UTF-16, not UTF-8 text")
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        _locate_bad_utf8(data, report, label)
        return None


# --- JSON ---------------------------------------------------------------------------------------------------

def parse_json_array(text: str, report: ImportReport) -> list[tuple[int, Any]]:
    """A JSON list, each element tagged with the line it starts on (for FIRE's released JSON)."""
    decoder = json.JSONDecoder()
    records: list[tuple[int, Any]] = []
    pos = text.index("[") + 1
    line, counted = 1, 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text):
            report.add(text.count("\n") + 1, None, "invalid JSON: the list is not closed with ']' (truncated file?)")
            return records
        if text[pos] == "]":
            rest = text[pos + 1:]
            if rest.strip():
                extra = pos + 1 + len(rest) - len(rest.lstrip())
                report.add(text.count("\n", 0, extra) + 1, None, "invalid JSON: extra data after the closing ']'")
            return records
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as error:
            report.add(error.lineno, None, f"invalid JSON: {error.msg} (column {error.colno})")
            return records
        except RecursionError:
            report.add(line, None, "invalid JSON: nested too deeply")
            return records
        records.append((line, value))


# --- the importer contract ----------------------------------------------------------------------------------

@dataclass
class ImportContext:
    """What an importer gets: the file, the report to fill, and the batch of that name if it exists already
    (read-only until ``write``)."""

    path: Any  # pathlib.Path
    report: ImportReport
    batch: Any = None  # annotate.models.Batch | None
    update: bool = False
    max_rounds: int = 3
    options: dict = field(default_factory=dict)  # importer-specific: "map", "images_dir", ...
    progress: Progress | None = None

    def tick(self, phase: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(phase, done, total)


class Importer:
    """One input format. ``validate`` reads and checks everything and returns a plan (or None when the file
    could not be read at all) without writing; ``write`` runs inside the batch's single transaction."""

    name = ""
    batch_kind = ""

    def validate(self, ctx: ImportContext) -> Any:
        raise NotImplementedError

    def has_changes(self, plan: Any) -> bool:
        raise NotImplementedError

    def write(self, plan: Any, ctx: ImportContext, batch: Any) -> None:
        raise NotImplementedError

    def record_count(self, batch: Any) -> int:
        """How many items the batch holds after a write (Batch.task_count)."""
        raise NotImplementedError


def records_only_objects(records: list[tuple[int, Any]], report: ImportReport, *, unit: str = "line"):
    """Keep the records that are JSON objects; report the others."""
    kept = []
    for line, value in records:
        if isinstance(value, dict):
            kept.append((line, value))
        else:
            report.add(line, None, f"expected a JSON object, got {json_type(value)}", unit=unit)
    if len(kept) > LIMITS.max_records:
        report.add(None, None, f"the file has {len(kept):,} records; at most {LIMITS.max_records:,} are allowed")
        return []
    return kept
