"""FIRE rating exports number a turn as the rating page shows it, and Table A1's CIs resample conversations (a
cluster bootstrap), since several raters score the same conversation."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.core.management import call_command

from annotate.imports.batches import import_fire
from annotate.models import Batch, Conversation
from tests.annotate.rating.fire.fire_data import record, write_images_dir, write_json
from tests.evaluation.fire.test_fire_reports import rate_all

pytestmark = pytest.mark.django_db


def export_fire(capsys, batch: str, what: str, fmt: str = "csv", **options) -> str:
    call_command("export_fire", batch=batch, what=what, format=fmt, **options)
    return capsys.readouterr().out


def test_a_turn_has_the_number_raters_saw_in_every_export(fire_batch, raters, client, capsys):
    rate_all(raters)
    first = Conversation.objects.get(external_id="fire-000001")
    client.force_login(raters[0])
    page = client.get(f"/annotate/conversations/{first.id}/").content.decode()
    # The page's rateable turns of conversation 1 (turn indices 1, 2, 3 in the database) are labelled 2, 3, 4.
    shown = [int(n) for n in re.findall(r"\(turn (\d+), 1–5\)", page)]
    assert shown == [2, 3, 4]

    ratings = list(csv.DictReader(io.StringIO(export_fire(capsys, "fire-sample", "ratings"))))
    assert sorted({int(r["turn"]) for r in ratings if r["conversation"] == "fire-000001"}) == shown
    assert sorted({int(r["turn"]) for r in ratings if r["conversation"] == "fire-000002"}) == [2, 3, 4, 5, 6]

    disputed = list(csv.DictReader(io.StringIO(export_fire(capsys, "fire-sample", "disagreements"))))
    assert disputed and all(int(r["Turn"]) in (shown if r["Conversation"] == "fire-000001" else [2, 3, 4, 5, 6])
                            for r in disputed)
    by_turn = list(csv.DictReader(io.StringIO(export_fire(capsys, "fire-sample", "summary", by="turn"))))
    assert [row["Turn"] for row in by_turn] == ["2", "3", "4", "5", "6"]

    records = [json.loads(line) for line in export_fire(capsys, "fire-sample", "conversations", "jsonl").splitlines()]
    assert records[0]["conversations"][1]["turn"] == 2  # the FIRE JSON says it too, beside each rated turn


def test_table_a1_resamples_conversations_not_single_ratings(tmp_path, raters, capsys):
    # Two one-round conversations in one split, each with one rated turn (the teacher's feedback); all three raters
    # give conversation A 1 and conversation B 5: six ratings, mean 3.
    records = [record("bars_01.png", f"Question {c}?", "green", 1, source="chartqa", split="fire_test", id=c)
               for c in ("A", "B")]
    report = import_fire(write_json(tmp_path / "fire.json", records), name="fire-clusters",
                         images=write_images_dir(tmp_path / "images"), overlap=3)
    assert report.status == "imported", report.render()
    rate_all(raters, {rater.username: {"A": {1: 1}, "B": {1: 5}} for rater in raters})
    # A resample draws two conversations with replacement: AA (mean 1), AB or BA (3), BB (5), with probabilities
    # 1/4, 1/2, 1/4. The 2.5th and 97.5th percentiles of 2,000 such resamples fall inside the AA and BB masses:
    # [1.00, 5.00]. Resampling the six ratings instead gives a binomial mean: P(all six are 1) = 1/64 < 2.5%, so
    # its interval would be [1.67, 4.33] (one 5 among six: 10/6; five: 26/6), too narrow for two conversations.
    table = json.loads(export_fire(capsys, "fire-clusters", "table-a1", "json"))
    (row,) = table["rows"]
    assert (row["#Feedback"], row["Feedback"], row["Feedback 95% CI"]) == (6, 3.0, "[1.00, 5.00]")
    assert any("resampling conversations" in note for note in table["notes"])
    summary = json.loads(export_fire(capsys, "fire-clusters", "summary", "json"))
    assert [(r["95% CI low"], r["95% CI high"]) for r in summary["rows"]] == [(1.0, 5.0)]
    assert Batch.objects.get(name="fire-clusters").kind == Batch.Kind.FIRE
