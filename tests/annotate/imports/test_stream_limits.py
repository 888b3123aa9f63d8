"""The records file is streamed with caps on line length and line count: a small zip that inflates to a huge
file is refused with the line that broke the cap, after reading little of it and with little memory."""

from __future__ import annotations

import io
import json
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotate.importkit import records_file, sources
from annotate.importkit.common import ImportReport
from annotate.importkit.records_file import load_records
from annotate.imports.batches import batch_import
from annotate.server.json_limits import DEPTH_MESSAGE
from tests.annotate.imports.files import db_counts, jsonl_bytes, task

MIB = 1024**2
TRACED_BOUND = 64 * MIB  # generous: the records file alone is 100 MiB


def _report() -> ImportReport:
    return ImportReport(kind="test", batch="b")


def _zip_of(path: Path, name: str, pieces) -> Path:
    """A zip whose one text file is the concatenation of ``pieces`` (written a piece at a time)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive, \
            archive.open(name, "w", force_zip64=True) as out:
        for piece in pieces:
            out.write(piece)
    return path


def _import_traced(**kwargs):
    tracemalloc.start()
    try:
        report = batch_import(**kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return report, peak


KINDS = {  # case: (import kind, the records file's name in the zip, import options)
    "interfeedback": ("interfeedback", "tasks.jsonl", {}),
    "fire": ("fire", "conversations.jsonl", {}),
    "rows": ("rows", "rows.jsonl", {"map": "question=q,answer=a"}),
    "rows-csv": ("rows", "rows.csv", {"map": "question=q,answer=a"}),  # read whole, lines counted as it is read
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", sorted(KINDS))
@pytest.mark.parametrize("first_line", [b"", b'{"id": "a"}\n'], ids=["only-newlines", "after-a-record"])
def test_a_zip_bomb_of_newlines_is_refused_at_the_line_cap(tmp_path, case, first_line):
    kind, name, options = KINDS[case]
    bomb = _zip_of(tmp_path / "bomb.zip", name, [first_line, *(b"\n" * MIB for _ in range(100))])
    assert bomb.stat().st_size < 200 * 1024  # ~100 kB on disk, 100 MiB inflated
    before = db_counts()
    report, peak = _import_traced(path=bomb, name="bomb", kind=kind, options=options)
    cap = sources.LIMITS.max_lines
    assert report.status == "invalid"
    assert [str(p) for p in report.problems] == [
        f"line {cap + 1}: more than {cap:,} lines (blank lines count too); split the batch into smaller files"]
    assert db_counts() == before
    print(f"\n{case}, {first_line!r}: newline bomb refused, peak traced memory {peak / MIB:.1f} MiB")
    assert peak < TRACED_BOUND


@pytest.mark.django_db
def test_an_endless_line_is_refused_without_being_kept(tmp_path):
    good = jsonl_bytes([task("t1")])
    bomb = _zip_of(tmp_path / "line.zip", "tasks.jsonl", [good, *(b" " * MIB for _ in range(100)), b"\n", good])
    report, peak = _import_traced(path=bomb, name="long", kind="interfeedback")
    assert report.status == "invalid"
    assert [str(p) for p in report.problems][0] == (
        f"line 2: the line is {100 * MIB:,} bytes long; at most 1,048,576 bytes (1 MiB) are allowed")
    assert [p.line for p in report.problems] == [2, 3]  # line 3 is read: t1 again, a duplicate id
    print(f"\nendless line refused, peak traced memory {peak / MIB:.1f} MiB")
    assert peak < TRACED_BOUND


def test_the_line_cap_counts_blank_lines_and_names_the_line(monkeypatch):
    monkeypatch.setattr(sources.LIMITS, "max_lines", 5)
    report = _report()
    load_records(b'{"a": 1}\n\n\n\n{"a": 2}\n{"a": 3}\n', report)
    assert [str(p) for p in report.problems] == [
        "line 6: more than 5 lines (blank lines count too); split the batch into smaller files"]
    report = _report()
    assert load_records(b'{"a": 1}\n\n\n\n{"a": 2}\n', report) == [(1, {"a": 1}), (5, {"a": 2})] and report.ok
    report = _report()
    assert load_records(b"\n" * 5 + b"[1]", report) == [] and str(report.problems[0]).startswith("line 6: more than")
    report = _report()
    assert load_records(b"\n" * 4 + b"[{}]\n", report) == [(5, {})] and report.ok  # 5 lines: within the cap
    report = _report()
    assert load_records(b"[{},\n{},\n{},\n{},\n{},\n{}]", report) == []
    assert str(report.problems[0]).startswith("line 6: more than")


def test_the_total_size_is_capped_while_reading(monkeypatch):
    monkeypatch.setattr(sources.LIMITS, "max_text_bytes", 100)
    report = _report()
    assert load_records(b'{"a": 1}\n' * 20, report) == []
    assert [str(p) for p in report.problems] == [
        "the file is larger than 100 bytes; split the batch into smaller files"]


def test_a_deeply_nested_line_is_a_problem_of_its_line_not_a_crash():
    report = _report()
    nested = b'{"id": "x", "meta": ' + b'{"a":' * 300 + b"1" + b"}" * 301
    assert load_records(b'{"a": 1}\n' + nested + b'\n{"a": 2}\n', report) == [(1, {"a": 1}), (3, {"a": 2})]
    assert [str(p) for p in report.problems] == [f"line 2: invalid JSON: {DEPTH_MESSAGE}"]


@pytest.mark.django_db
def test_a_deeply_nested_task_is_reported_by_the_import(tmp_path):
    path = tmp_path / "tasks.jsonl"
    record = json.dumps(task("t1"))[:-1] + ', "meta": ' + '{"a":' * 300 + "1" + "}" * 300 + "}"
    path.write_text(json.dumps(task("t0")) + "\n" + record + "\n")
    report = batch_import(path=path, name="nested", kind="interfeedback")
    assert report.status == "invalid"
    assert [str(p) for p in report.problems] == [f"line 2: invalid JSON: {DEPTH_MESSAGE}"]


def test_a_json_list_after_blank_lines_keeps_the_files_line_numbers():
    report = _report()
    assert load_records(b'\n\n[\n {"a": 1},\n {"a": 2}\n]\n', report) == [(4, {"a": 1}), (5, {"a": 2})]
    report = _report()
    load_records(b'\n\n[\n {"a": 1},\n {"a": \n', report)
    assert str(report.problems[0]).startswith("line 6: invalid JSON")


def test_a_bad_utf8_line_is_named_and_the_others_are_read():
    report = _report()
    records = load_records(b'{"a": 1}\n{"a": "caf\xe9"}\n{"a": 3}\n', report)
    assert records == [(1, {"a": 1}), (3, {"a": 3})]
    assert [str(p) for p in report.problems] == [
        "line 2: the line is not valid UTF-8 (byte 0xe9 at column 11); it looks like Latin-1/Windows-1252 text "
        "— save the file as UTF-8"]


# --- the chunked line splitter against the obvious one ----------------------------------------------------------

def _reference(data: bytes, max_line: int, max_lines: int):
    """Every line held whole: what the stream must yield, the overlong lines, and whether the cap is passed."""
    out, overlong = [], []
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if number > max_lines:
            return out, overlong, True
        if len(line) > max_line:
            overlong.append((number, f"the line is {len(line):,} bytes long"))
        elif line.strip(b" \t\r\n"):
            out.append((number, line))
    return out, overlong, False


class _SmallChunks:
    def __init__(self, data: bytes, size: int):
        self.chunks, self.size = records_file._Chunks(io.BytesIO(data), "the file"), size

    def read(self, _size=None):
        return self.chunks.read(self.size)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.one_of(st.just(b""), st.just(b"  "), st.binary(min_size=1, max_size=12).map(
        lambda b: b.replace(b"\n", b"x"))), max_size=30),
    trailing_newline=st.booleans(),
    chunk=st.integers(min_value=1, max_value=9),
    max_line=st.integers(min_value=1, max_value=10),
    max_lines=st.integers(min_value=1, max_value=40),
)
def test_chunked_lines_match_whole_lines(lines, trailing_newline, chunk, max_line, max_lines):
    data = b"\n".join(lines) + (b"\n" if trailing_newline and lines else b"")
    expected, expected_overlong, expected_capped = _reference(data, max_line, max_lines)
    saved = (sources.LIMITS.max_line_bytes, sources.LIMITS.max_lines)
    sources.LIMITS.max_line_bytes, sources.LIMITS.max_lines = max_line, max_lines
    report, got, capped = _report(), [], False
    try:
        chunks = _SmallChunks(data, chunk)
        for item in records_file._lines(chunks.read(), 0, chunks, report):
            got.append(item)
    except records_file._TooManyLines:
        capped = True
    finally:
        sources.LIMITS.max_line_bytes, sources.LIMITS.max_lines = saved
    assert (got, capped) == (expected, expected_capped)
    problems = [(p.line, p.message) for p in report.problems]
    assert len(problems) == len(expected_overlong)
    for (line, message), (want_line, want_start) in zip(problems, expected_overlong, strict=True):
        assert line == want_line and message.startswith(want_start), (problems, expected_overlong)
