"""manage.py import_batch and export_batch."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Batch, Task, WorkItem
from tests.annotate.imports.files import db_counts, task, write_jsonl
from tests.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db


def test_import_batch_command(sample_zip, capsys):
    ModelConfigFactory(name="replay")  # the sample's recorded answers are keyed by this model

    call_command("import_batch", str(sample_zip), "--name", "cmd", "--models", "replay", "--overlap", "2")

    out = capsys.readouterr()
    assert "Imported (3 tasks, 3 created" in out.out and "timings:" in out.out
    assert "write" in out.err  # the progress bars go to stderr
    batch = Batch.objects.get(name="cmd")
    assert batch.overlap == 2 and WorkItem.objects.filter(batch=batch).count() == 3

    call_command("import_batch", str(sample_zip), "--name", "cmd", "--no-progress")
    assert "Unchanged" in capsys.readouterr().out


def test_import_batch_command_fails_with_the_report(tmp_path, capsys):
    path = write_jsonl(tmp_path / "bad.jsonl", [task("a", answer="Q"), task("a")])
    before = db_counts()

    with pytest.raises(CommandError, match=r"2 problem\(s\); nothing was imported"):
        call_command("import_batch", str(path), "--name", "bad", "--no-progress")

    out = capsys.readouterr().out
    assert "line 1, field answer: 'Q' is not an option letter" in out
    assert "line 2, field id: duplicate id 'a' (first used on line 1)" in out
    assert db_counts() == before


def test_import_batch_dry_run_and_json(sample_zip, capsys):
    call_command("import_batch", str(sample_zip), "--name", "dry", "--dry-run", "--json")

    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "dry_run" and report["counts"]["created"] == 3
    assert not Batch.objects.exists()


def test_import_batch_rows_by_extension_with_map(tmp_path, capsys):
    (tmp_path / "b.csv").write_text("qid,prompt,label,subject\nq1,How many?,3,Math\n", encoding="utf-8")

    call_command("import_batch", str(tmp_path / "b.csv"), "--name", "rows", "--no-progress",
                 "--map", "id=qid,question=prompt,answer=label,category=subject")

    assert Task.objects.get().external_id == "q1"


def test_import_batch_templates_file(sample_zip, tmp_path):
    templates = tmp_path / "t.json"
    templates.write_text(json.dumps({"simple_feedback": "Wrong."}), encoding="utf-8")

    call_command("import_batch", str(sample_zip), "--name", "t", "--templates", str(templates), "--no-progress")

    assert Batch.objects.get(name="t").prompt_templates == {"simple_feedback": "Wrong."}


def test_export_batch_command(sample_zip, tmp_path, capsys):
    call_command("import_batch", str(sample_zip), "--name", "e", "--no-progress")

    call_command("export_batch", "--batch", "e", "--out", str(tmp_path / "e.zip"))

    assert "Wrote 3 tasks and 2 images" in capsys.readouterr().out
    with pytest.raises(CommandError, match="No batch named 'nope'"):
        call_command("export_batch", "--batch", "nope", "--out", str(tmp_path / "n.zip"))
