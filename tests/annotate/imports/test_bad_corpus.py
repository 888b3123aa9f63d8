"""Every file in tests/data/bad/ gets a clear error naming its line and field, and leaves the database as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotate.imports.batches import batch_import
from tests.annotate.imports.files import db_counts

BAD = Path(__file__).resolve().parents[2] / "data" / "bad"
ROWS = {"map": "id=qid,category=subject"}

# file -> (kind, options, substrings the report's problems must contain, where: the "line N, field F" prefix)
EXPECTED = {
    "truncated_json.jsonl": ("interfeedback", {}, "line 2", "invalid JSON: Unterminated string"),
    "wrong_types.jsonl": ("interfeedback", {}, "line 1, field question", "expected a string, got a number"),
    "not_an_object.jsonl": ("interfeedback", {}, "line 2", "expected a JSON object, got a list"),
    "missing_required.jsonl": ("interfeedback", {}, "line 1, field question", "is required"),
    "empty.jsonl": ("interfeedback", {}, "empty.jsonl", "is empty"),
    "blank_lines_only.jsonl": ("interfeedback", {}, "blank_lines_only.jsonl", "is empty"),
    "duplicate_ids.jsonl": ("interfeedback", {}, "line 3, field id", "duplicate id 'a-1' (first used on line 1)"),
    "unknown_answer_type.jsonl": ("interfeedback", {}, "line 1, field answer_type", "'essay' is not one of"),
    "choice_not_in_options.jsonl": ("interfeedback", {}, "line 1, field answer", "'E' is not an option letter"),
    "choice_without_options.jsonl": ("interfeedback", {}, "line 1, field options", "choice tasks need"),
    "number_not_a_number.jsonl": ("interfeedback", {}, "line 1, field answer", "'three' is not a number"),
    "option_not_a_string.jsonl": ("interfeedback", {}, "line 1, field options[1]", "expected a string"),
    "recorded_answers_shape.jsonl": ("interfeedback", {}, "line 1, field recorded_answers.gpt-4o",
                                     "expected a list of answer strings"),
    "recorded_answers_too_many.jsonl": ("interfeedback", {}, "line 1, field recorded_answers.gpt-4o",
                                        "has 5 answers"),
    "latin1.jsonl": ("interfeedback", {}, "line 2", "not valid UTF-8 (byte 0xf9"),
    "utf16_bom.jsonl": ("interfeedback", {}, "utf16_bom.jsonl", "UTF-16"),
    "nul_bytes.jsonl": ("interfeedback", {}, "line 2", "NUL bytes"),
    "remote_image.jsonl": ("interfeedback", {}, "line 1, field images[0]", "http(s) image URLs are refused"),
    "path_escape_image.jsonl": ("interfeedback", {}, "line 1, field images[0]", "contains '..'"),
    "absolute_image_path.jsonl": ("interfeedback", {}, "line 1, field images[0]", "is an absolute path"),
    "huge_line.zip": ("interfeedback", {}, "line 2", "bytes long; at most 1,048,576"),
    "missing_image.zip": ("interfeedback", {}, "line 1, field images[0]", "'images/missing.png' is not in the zip"),
    "zero_byte_image.zip": ("interfeedback", {}, "line 1, field images[0]", "empty (0 bytes)"),
    "not_an_image.zip": ("interfeedback", {}, "line 1, field images[0]", "not an image"),
    "corrupt_png.zip": ("interfeedback", {}, "line 1, field images[0]", "corrupt or truncated"),
    "bomb_png.zip": ("interfeedback", {}, "line 1, field images[0]", "decompression bomb"),
    "too_many_pixels_png.zip": ("interfeedback", {}, "line 1, field images[0]", "8000x6000 pixels"),
    "zip_slip.zip": ("interfeedback", {}, "field zip entry '../evil.png'", "contains '..'"),
    "zip_absolute_path.zip": ("interfeedback", {}, "field zip entry '/tmp/evil.png'", "absolute path"),
    "zip_symlink.zip": ("interfeedback", {}, "field zip entry 'images/link.png'", "symbolic links"),
    "zip_declared_huge.zip": ("interfeedback", {}, "the zip", "would inflate to 8,053,063,680 bytes"),
    "zip_without_tasks.zip": ("interfeedback", {}, "the zip", "has no tasks.jsonl"),
    "truncated.zip": ("interfeedback", {}, "truncated.zip", "not a valid zip archive"),
    "rows_missing_column.csv": ("rows", {"map": "id=qid,question=q"}, "field question", "column 'q' is not in"),
    "rows_short_row.csv": ("rows", ROWS, "line 3", "the row has 2 cells; the header has 4"),
    "rows_latin1.csv": ("rows", ROWS, "line 3", "not valid UTF-8 (byte 0xe9"),
    "rows_bad_options.csv": ("rows", ROWS, "line 2, field options", "expected a list of strings"),
    "rows_answer_not_option.parquet": ("rows", ROWS, "row 2, field answer", "'Q' is not an option letter"),
}


def test_the_corpus_is_complete_and_small():
    files = sorted(p.name for p in BAD.iterdir() if p.is_file() and p.suffix != ".py")
    mine = [name for name in files if name in EXPECTED]
    assert sorted(EXPECTED) == mine, "regenerate with tests/data/bad/make_bad_corpus.py"
    assert len(mine) >= 25
    assert sum((BAD / name).stat().st_size for name in mine) < 1_000_000


@pytest.fixture
def existing_batch(tmp_path, db):
    """Something in the database already, so 'unchanged' also covers an existing batch and its images."""
    from tests.annotate.imports.files import png, task, write_zip

    path = write_zip(tmp_path / "good.zip", [task("t-1", images=["images/a.png"])], {"images/a.png": png()})
    report = batch_import(path=path, name="existing", kind="interfeedback")
    assert report.status == "imported", report.render()


@pytest.mark.parametrize("filename", sorted(EXPECTED))
@pytest.mark.parametrize("batch_name", ["fresh", "existing"])
def test_bad_file_is_reported_and_nothing_is_written(filename, batch_name, existing_batch):
    kind, options, where, what = EXPECTED[filename]
    if kind == "rows" and batch_name == "existing":
        batch_name = "fresh"  # same rules; the existing batch is checked through the interfeedback files
    before = db_counts()

    report = batch_import(path=BAD / filename, name=batch_name, kind=kind, options=options)

    assert report.status == "invalid"
    texts = [p.as_dict()["text"] for p in report.problems]
    assert any(text.startswith(where) and what in text for text in texts), texts
    assert report.as_dict()["problem_total"] == report.problem_total >= 1
    assert db_counts() == before
