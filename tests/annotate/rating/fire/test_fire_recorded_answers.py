"""A FIRE file's ``recorded_answers`` (what replay models play back in FIRE runs) are imported where the runs read
them, checked like an InterFeedback task's, and a free-dialogue run replays them."""

from __future__ import annotations

import pytest

from annotate.bench import services
from annotate.imports.batches import import_fire
from annotate.models import BenchRun, Conversation, FireRunTurn
from tests.annotate.bench.test_bench_engine import run_all
from tests.annotate.rating.fire.fire_data import record, write_images_dir, write_json
from tests.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db

RECORDED = {"student": ["Answer: blue", "Answer: green"],
            "teacher@student": ["Score: 4\nFeedback: look again.", "Score: 9\nFeedback: right."]}


def fire_import(tmp_path, **extra):
    path = write_json(tmp_path / "fire.json", [record("bars_01.png", "Which colour?", "green", 2, source="s",
                                                      split="fire_test", id="c1", **extra)])
    return import_fire(path, name="replayed", images=write_images_dir(tmp_path / "images"), overlap=1)


def test_recorded_answers_are_imported_and_a_free_dialogue_replays_them(tmp_path):
    for name in ("student", "teacher"):
        ModelConfigFactory(name=name, backend="replay", backend_settings={"chunk_delay": 0})
    report = fire_import(tmp_path, recorded_answers=RECORDED)
    assert report.status == "imported", report.render()
    assert not any("recorded_answers" in warning for warning in report.warnings)
    conversation = Conversation.objects.get(external_id="c1")
    assert conversation.metadata["recorded_answers"] == RECORDED

    run = services.fire_run_create(batch=conversation.batch, protocol="fire_free", students="student",
                                   teachers="teacher", baseline="student", lanes=1, dispatch=False)
    run_all(run)
    run.refresh_from_db()
    assert run.status == BenchRun.Status.DONE, run.error
    turns = FireRunTurn.objects.filter(run=run).order_by("number")
    assert [t.text for t in turns if t.role == "student"] == RECORDED["student"]
    assert [int(t.score) for t in turns if t.role == "teacher"] == [4, 9]


@pytest.mark.parametrize(("recorded", "problem"), [
    ({"student": "Answer: blue"}, "expected a list of answer strings"),
    ({"student": []}, "has 0 answers"),
    ({"": ["Answer: blue"]}, "keys must be 1–150 characters"),
])
def test_bad_recorded_answers_are_refused_and_nothing_is_written(tmp_path, recorded, problem):
    report = fire_import(tmp_path, recorded_answers=recorded)
    assert report.status != "imported"
    assert problem in report.render()
    assert not Conversation.objects.exists()
