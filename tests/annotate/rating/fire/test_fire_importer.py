"""FIRE importer: the released JSON list or JSONL, images from a directory or a zip; bad input names the line and
field and writes nothing."""

import copy
import json

import pytest

from annotate.imports.batches import import_fire
from annotate.imports.registry import IMPORTERS
from annotate.models import Batch, Conversation, ImageBlob, Turn, WorkItem
from annotate.rating.fire.importer import FireImporter
from tests.annotate.rating.fire.fire_data import (
    sample_records,
    write_images_dir,
    write_images_zip,
    write_json,
    write_jsonl,
    write_sample,
)

pytestmark = pytest.mark.django_db


def nothing_written():
    return (Batch.objects.count(), Conversation.objects.count(), Turn.objects.count(), WorkItem.objects.count(),
            ImageBlob.objects.count()) == (0, 0, 0, 0, 0)


def test_fire_is_registered():
    assert isinstance(IMPORTERS["fire"], FireImporter)
    assert IMPORTERS["fire"].batch_kind == Batch.Kind.FIRE


def test_json_list_with_an_images_directory(tmp_path):
    path, images = write_sample(tmp_path)
    report = import_fire(path, name="fire", images=images, overlap=3)
    assert report.status == "imported", report.render()
    batch = Batch.objects.get(name="fire")
    assert (batch.kind, batch.overlap, batch.task_count, batch.status) == ("fire", 3, 2, "ready")
    first, second = batch.conversations.order_by("position")
    assert first.external_id == "fire-000001"
    assert (first.question, first.ground_truth, first.source, first.split, first.round) == (
        "Which bar is the tallest?", "green", "chartqa", "fire_test", 2)
    assert first.original_scores == [3, 10]
    assert first.image is not None and first.image_name == "bars_01.png"
    assert [(t.role, t.kind, t.is_rateable) for t in first.turns.order_by("index")] == [
        ("student", "response", False), ("teacher", "feedback", True),
        ("student", "response", True), ("teacher", "feedback", True),
    ]
    assert second.turns.filter(is_rateable=True).count() == 5
    assert WorkItem.objects.filter(batch=batch, conversation__isnull=False, task__isnull=True).count() == 2
    assert report.counts["rateable turns"] == 8


def test_jsonl_with_an_images_zip_and_a_zip_holding_everything(tmp_path):
    records = sample_records()
    report = import_fire(write_jsonl(tmp_path / "fire.jsonl", records), name="a",
                         images=write_images_zip(tmp_path / "images.zip"))
    assert report.status == "imported", report.render()
    report = import_fire(write_images_zip(tmp_path / "all.zip", records=records), name="b")
    assert report.status == "imported", report.render()
    # Same images, stored once.
    assert ImageBlob.objects.count() == 2
    assert Conversation.objects.count() == 4


def test_reimport_is_unchanged_and_changed_content_needs_update(tmp_path):
    path, images = write_sample(tmp_path)
    import_fire(path, name="fire", images=images)
    again = import_fire(path, name="fire", images=images)
    assert again.status == "unchanged"
    assert Conversation.objects.count() == 2

    records = sample_records()
    records[0]["question"]["value"] = "Which bar is the shortest?"
    write_json(path, records)
    refused = import_fire(path, name="fire", images=images)
    assert refused.status == "invalid"
    assert "line 2: conversation 'fire-000001' is already in batch 'fire' with different content" in refused.render()
    updated = import_fire(path, name="fire", images=images, update=True)
    assert updated.status == "imported", updated.render()
    assert Conversation.objects.get(external_id="fire-000001").question == "Which bar is the shortest?"
    assert Turn.objects.count() == 10 and WorkItem.objects.count() == 2


def _broken(mutate):
    records = sample_records()
    mutate(records)
    return records


BAD = [
    ("missing question", lambda r: r[0].pop("question"), "line 2, field question: is required"),
    ("question without value", lambda r: r[1]["question"].pop("value"), "field question.value: expected a non-empty"),
    ("ground truth not text", lambda r: r[0]["groundtruth"].update(value=["a"]),
     "line 2, field groundtruth.value: expected a non-empty string"),
    ("unknown role", lambda r: r[0]["conversations"][1].update(role="tutor"),
     "field conversations[1].role: 'tutor' is not one of student, teacher"),
    ("role and type disagree", lambda r: r[0]["conversations"][1].update(type="response"),
     "field conversations[1].type: a teacher turn must have type 'feedback'"),
    ("empty turn text", lambda r: r[0]["conversations"][2].update(value="  "),
     "field conversations[2].value: expected the turn's text, got empty"),
    ("no turns", lambda r: r[0].update(conversations=[]), "field conversations: expected a non-empty list"),
    ("nothing to rate", lambda r: r[0].update(conversations=r[0]["conversations"][:1]),
     "field conversations: has nothing to rate"),
    ("missing image file", lambda r: r[1].update(image="nope.png", img_path="nope.png"),
     "field image: 'nope.png' is not in"),
    ("image path leaves the folder", lambda r: r[0].update(image="../secret.png"), "contains '..'"),
    ("remote image", lambda r: r[0].update(image="http://example.com/a.png"), "http(s) image URLs are refused"),
    ("round not a number", lambda r: r[0].update(round="two"), "field round: expected a whole number"),
    ("score not numbers", lambda r: r[0].update(score="3,10"), "field score: expected a list of numbers"),
    ("duplicate ids", lambda r: [x.update(id="same") for x in r], "field id: duplicate id 'same' (first on line 2)"),
    ("record not an object", lambda r: r.append(["not", "an", "object"]), "expected a JSON object"),
]


@pytest.mark.parametrize("name, mutate, expected", BAD, ids=[b[0] for b in BAD])
def test_bad_records_are_named_and_nothing_is_written(tmp_path, name, mutate, expected):
    path, images = write_sample(tmp_path, _broken(mutate))
    report = import_fire(path, name="fire", images=images)
    assert report.status == "invalid"
    assert expected in report.render(), report.render()
    assert nothing_written()


def test_line_numbers_point_at_the_record_in_a_json_list(tmp_path):
    records = sample_records()
    records[1]["conversations"][0]["role"] = "robot"
    path = write_json(tmp_path / "fire.json", records)
    text = path.read_text().splitlines()
    starts = [i for i, line in enumerate(text, start=1) if line == " {"]  # indent=1: top-level records
    start = starts[1]
    report = import_fire(path, name="fire", images=write_images_dir(tmp_path / "images"))
    assert f"line {start}, field conversations[0].role" in report.render()


def test_truncated_json_and_a_corrupt_image(tmp_path):
    path, images = write_sample(tmp_path)
    path.write_text(path.read_text()[:-40])
    report = import_fire(path, name="fire", images=images)
    assert report.status == "invalid" and "invalid JSON" in report.render()

    path, images = write_sample(tmp_path)
    (images / "bars_01.png").write_bytes(b"this is not a png")
    report = import_fire(path, name="fire", images=images)
    assert "line 2, field image: 'bars_01.png': the file is not an image" in report.render()
    assert nothing_written()


def test_one_bad_record_among_good_ones_writes_nothing(tmp_path):
    records = sample_records() * 3
    for n, rec in enumerate(records):
        rec = copy.deepcopy(rec)
        rec["id"] = f"c{n}"
        records[n] = rec
    records[4]["split"] = 7
    path, images = write_sample(tmp_path, records)
    report = import_fire(path, name="fire", images=images)
    assert report.problem_total == 1 and "field split: expected a string" in report.render()
    assert nothing_written()


def test_unknown_fields_are_kept_and_warned_once(tmp_path):
    records = [dict(r, annotator_note="keep me") for r in sample_records()]
    path, images = write_sample(tmp_path, records)
    report = import_fire(path, name="fire", images=images)
    assert report.status == "imported"
    assert [w for w in report.warnings if "annotator_note" in w] == [
        "field 'annotator_note' (first on line 2) is not a FIRE field; it is kept in the metadata"]
    assert Conversation.objects.first().metadata["extra"] == {"annotator_note": "keep me"}


def test_dry_run_writes_nothing(tmp_path):
    path, images = write_sample(tmp_path)
    report = import_fire(path, name="fire", images=images, dry_run=True)
    assert report.status == "dry_run" and report.counts["conversations"] == 2
    assert nothing_written()
    assert json.loads(json.dumps(report.as_dict()))["counts"]["turns"] == 10
