"""Shared validation pieces: problems, text decoding, JSON records with line numbers, paths, typed fields."""

from __future__ import annotations

import pytest

from annotate.importkit import sources
from annotate.importkit.common import (
    Fields,
    ImportReport,
    Problem,
    check_relative_path,
    decode_text,
)
from annotate.importkit.records_file import load_records


def _report() -> ImportReport:
    return ImportReport(kind="test", batch="b")


def test_problem_text():
    assert str(Problem(3, "answer", "is wrong")) == "line 3, field answer: is wrong"
    assert str(Problem(None, "settings.models", "unknown")) == "field settings.models: unknown"
    assert str(Problem(2, None, "bad JSON", unit="row")) == "row 2: bad JSON"
    assert str(Problem(None, None, "the file is empty")) == "the file is empty"


@pytest.mark.parametrize(("data", "expected"), [
    (b'\xef\xbb\xbf{"a": 1}\n', '{"a": 1}\n'),
    ("caf\u00e9\n".encode(), "caf\u00e9\n"),
])
def test_decode_text_accepts_utf8_with_or_without_bom(data, expected):
    report = _report()
    assert decode_text(data, report) == expected and report.ok


@pytest.mark.parametrize(("data", "problem"), [
    (b"", "the file is empty"),
    (b"ok\nbad \xe9\nok\nbad \xff\n", "line 2: the file is not valid UTF-8 (byte 0xe9 at column 5)"),
    (b"\xff\xfeh\x00i\x00", "the file is UTF-16/UTF-32 text; save it as UTF-8"),
    (b"abc\n\x00\x00", "line 2: the file contains NUL bytes"),
])
def test_decode_text_reports_what_is_wrong(data, problem):
    report = _report()
    assert decode_text(data, report) is None
    assert str(report.problems[0]).startswith(problem)


def test_every_bad_line_is_named():
    report = _report()
    decode_text(b"ok\nbad \xe9\nok\nbad \xff\n", report)
    assert [p.line for p in report.problems] == [2, 4]


def test_json_lines_skip_blanks_and_cap_long_lines(monkeypatch):
    monkeypatch.setattr(sources.LIMITS, "max_line_bytes", 10)
    report = _report()
    data = b'1\n\n  \n"short"\n"' + b"x" * 9 + b'"\n2'
    assert load_records(data, report) == [(1, 1), (4, "short"), (6, 2)]
    assert str(report.problems[0]) == "line 5: the line is 11 bytes long; at most 10 bytes are allowed"


def test_json_list_records_carry_their_line_numbers():
    report = _report()
    text = b'[\n  {"a": 1},\n  {"a": 2,\n   "b": 3},\n\n  {"a": 4}\n]\n'
    assert load_records(text, report) == [(2, {"a": 1}), (3, {"a": 2, "b": 3}), (6, {"a": 4})]
    assert report.ok


@pytest.mark.parametrize(("text", "problem"), [
    (b'[\n {"a": 1},\n {"a": 2', "line 3: invalid JSON"),
    (b'[\n {"a": 1}\n', "line 3: invalid JSON: the list is not closed"),
    (b'[{"a": 1}]\n{"b": 2}', "line 2: invalid JSON: extra data after the closing ']'"),
])
def test_broken_json_lists(text, problem):
    report = _report()
    load_records(text, report)
    assert str(report.problems[0]).startswith(problem)


def test_jsonl_errors_use_the_clear_wording():
    report = _report()
    assert load_records(b'{"a": 1}\n{"a": \n{"a": NaN}\n', report) == [(1, {"a": 1})]
    assert [str(p) for p in report.problems] == [
        "line 2: invalid JSON: Expecting value (column 7)",
        "line 3: invalid JSON (numbers too large, NaN, or invalid Unicode escapes)"]


@pytest.mark.parametrize(("name", "ok"), [
    ("images/a.png", True), ("a..b.png", True), ("./images/a.png", True),
    ("../a.png", False), ("images/../../a.png", False), ("/etc/passwd", False), ("C:\\x.png", False),
    ("images\\..\\a.png", False), ("", False), ("  ", False), ("a\x00.png", False),
])
def test_relative_paths(name, ok):
    assert (check_relative_path(name) is None) is ok


def test_fields_report_types_at_the_record_line():
    report = _report()
    f = Fields({"q": 3, "opts": ["a", 2], "m": [], "flag": "yes", "kind": "x", "empty": " "}, 7, report,
               labels={"q": "prompt"})
    assert f.text("q") is None and f.text_list("opts") is None and f.mapping("m") is None
    assert f.boolean("flag") is None and f.one_of("kind", ("a", "b")) is None and f.text("empty") is None
    assert f.text("missing") is None and f.text("optional", required=False) == ""
    assert [str(p) for p in report.problems] == [
        "line 7, field prompt: expected a string, got a number (3)",
        "line 7, field opts[1]: expected a string, got a number (2)",
        "line 7, field m: expected an object, got a list ([])",
        "line 7, field flag: expected true or false, got a string ('yes')",
        "line 7, field kind: 'x' is not one of a, b",
        "line 7, field empty: must not be empty",
        "line 7, field missing: is required",
    ]
