"""Benchmark rows (JSONL / CSV / Parquet) with a column map; images as paths, data: URLs or bytes."""

from __future__ import annotations

import base64
import io
import json
import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annotate.imports.batches import batch_import
from annotate.models import ImageBlob, Task
from annotate.sessions.importers.rows import parse_mapping
from tests.annotate.imports.files import png

pytestmark = pytest.mark.django_db
MAP = "question=prompt,answer=label,image=image_path,id=qid,category=subject,options=choices"


def test_parse_mapping():
    assert parse_mapping("question=q, id=qid,images=img") == ({"question": "q", "id": "qid", "image": "img"}, [])
    mapping, errors = parse_mapping("questoin=q,answer=")
    assert errors == ["unknown field 'questoin' in the column map; known: id, question, answer, options, image, "
                      "category, answer_type, source, gold",
                      "'answer' in the column map needs a column name (field=column)"]


def test_csv_with_map_images_and_inferred_answer_types(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "1.png").write_bytes(png())
    (tmp_path / "rows.csv").write_text(
        "qid,prompt,choices,label,image_path,subject,difficulty\n"
        'q1,Which colour?,"[\'red\', \'blue\']",A,img/1.png,Art,easy\n'
        "q2,How many?,,12,,Math,hard\n"
        "q3,Name the city.,,Paris,,Geo,\n"
        'q4,"Multi-line\nquestion?","[""x"", ""y"", ""z""]",z,,Art,\n',
        encoding="utf-8")

    report = batch_import(path=tmp_path / "rows.csv", name="rows", kind="rows", options={"map": MAP})

    assert report.status == "imported", report.render()
    tasks = {t.external_id: t for t in Task.objects.all()}
    assert (tasks["q1"].answer_type, tasks["q1"].options, tasks["q1"].ground_truth) == ("choice", ["red", "blue"], "A")
    assert tasks["q1"].metadata == {"difficulty": "easy"} and tasks["q1"].category == "Art"
    assert (tasks["q2"].answer_type, tasks["q2"].ground_truth) == ("number", "12")
    assert tasks["q3"].answer_type == "text"
    assert tasks["q4"].question == "Multi-line\nquestion?" and tasks["q4"].ground_truth == "C"
    assert "1 choice answer(s) given as the option's text were turned into option letters" in report.warnings
    assert tasks["q1"].task_images.count() == 1


def test_csv_problem_lines_follow_multiline_cells(tmp_path):
    (tmp_path / "rows.csv").write_text(
        'qid,question,answer,subject,options\nr1,"two\nlines",A,Art,"[""a""]"\nr2,ok?,Z,Art,"[""a""]"\n',
        encoding="utf-8")

    report = batch_import(path=tmp_path / "rows.csv", name="rows", kind="rows", options={"map": "id=qid,category=subject"})

    assert [str(p) for p in report.problems] == [
        "line 4, field answer: 'Z' is not an option letter; the only option is A"]


def test_parquet_with_image_bytes_and_hf_struct(tmp_path):
    table = pa.table({
        "id": ["p1", "p2", "p3"],
        "question": ["Which?", "How many?", "Same picture?"],
        "options": [["x", "y", "z"], None, None],
        "answer": ["C", "4", "yes"],
        "image": [png("red"), None, None],
        "picture": [None, {"bytes": png("blue"), "path": "b.png"}, {"bytes": png("red"), "path": "r.png"}],
        "category": ["A", "B", "B"],
    })
    pq.write_table(table, tmp_path / "bench.parquet")

    report = batch_import(path=tmp_path / "bench.parquet", name="pq", kind="rows",
                          options={"map": "image=image"})
    assert report.status == "imported", report.render()
    assert Task.objects.get(external_id="p1").task_images.count() == 1

    report = batch_import(path=tmp_path / "bench.parquet", name="pq2", kind="rows", options={"map": "image=picture"})
    assert report.status == "imported", report.render()
    assert ImageBlob.objects.count() == 2  # red stored once across both batches, blue once


def test_jsonl_rows_with_data_urls_and_no_id_column(tmp_path):
    data_url = "data:image/png;base64," + base64.b64encode(png("green")).decode()
    rows = [{"q": "Which?", "a": "B", "opts": ["u", "v"], "img": data_url},
            {"q": "Sum?", "a": 3.5, "img": None}]
    (tmp_path / "rows.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")

    report = batch_import(path=tmp_path / "rows.jsonl", name="j", kind="rows",
                          options={"map": "question=q,answer=a,options=opts,image=img", "category": "Bench"})

    assert report.status == "imported", report.render()
    assert sorted(Task.objects.values_list("external_id", "category", "ground_truth")) == [
        ("row-1", "Bench", "B"), ("row-2", "Bench", "3.5")]
    assert any("no id column" in w for w in report.warnings)


def test_zip_with_one_rows_file_and_images(tmp_path):
    path = tmp_path / "bench.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data.csv", "id,question,answer,image,category\nz1,How many?,2,images/a.png,Count\n")
        archive.writestr("images/a.png", png())

    report = batch_import(path=path, name="z", kind="rows")

    assert report.status == "imported", report.render()
    assert Task.objects.get().task_images.count() == 1


def test_rows_need_question_and_answer_columns(tmp_path):
    (tmp_path / "rows.csv").write_text("id,text\n1,hello\n", encoding="utf-8")

    report = batch_import(path=tmp_path / "rows.csv", name="r", kind="rows")

    assert [str(p) for p in report.problems] == [
        "field question: no column for 'question'; map one with --map question=COLUMN",
        "field answer: no column for 'answer'; map one with --map answer=COLUMN"]


def test_unreadable_parquet(tmp_path):
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    report = batch_import(path=tmp_path / "broken.parquet", name="r", kind="rows")
    assert "the Parquet file cannot be read" in str(report.problems[0])


def test_rows_duplicate_ids_name_the_mapped_column(tmp_path):
    out = io.StringIO("qid,question,answer,category\nx,Q?,1,C\nx,Q?,2,C\n")
    (tmp_path / "rows.csv").write_text(out.getvalue(), encoding="utf-8")

    report = batch_import(path=tmp_path / "rows.csv", name="r", kind="rows", options={"map": "id=qid"})

    assert [str(p) for p in report.problems] == ["line 3, field qid: duplicate id 'x' (first used on line 2)"]
