"""The garbage collector during an import: off from reading the file to the commit (its passes over every record
cost a quarter of a large import's CPU), on again afterwards, and left off where the caller had turned it off."""

from __future__ import annotations

import gc

import pytest

from annotate.errors import ApplicationError
from annotate.imports.batches import batch_import
from annotate.models import Task
from tests.annotate.imports.files import task, write_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def collections():
    """The generations the collector walked while the test ran."""
    walked: list[int] = []

    def record(phase, info):
        if phase == "start":
            walked.append(info["generation"])

    gc.callbacks.append(record)
    yield walked
    gc.callbacks.remove(record)


def _records(n: int) -> list[dict]:
    return [task(f"t{i:05d}", meta={"row": i}, options=[f"option {c} of {i}" for c in "ABCD"]) for i in range(n)]


def test_a_large_import_runs_with_the_collector_off_and_turns_it_back_on(tmp_path, collections):
    path = write_jsonl(tmp_path / "tasks.jsonl", _records(5_000))
    seen: list[tuple[str, bool]] = []
    gc.collect()
    collections.clear()

    report = batch_import(path=path, name="big", kind="interfeedback",
                          progress=lambda phase, done, total: seen.append((phase, gc.isenabled())))

    assert report.status == "imported", report.render()
    # "write" is announced after the checks between reading and writing: off there too, not only in each phase.
    assert "write" in {phase for phase, _ in seen}
    assert [phase for phase, enabled in seen if enabled] == []
    assert gc.isenabled()
    # Afterwards at most one pass over the young objects left alive, never one over every record (generation 2).
    assert all(generation == 0 for generation in collections), collections
    assert Task.objects.filter(batch__name="big").count() == 5_000


def test_the_collector_is_on_again_after_a_refused_import(tmp_path):
    path = write_jsonl(tmp_path / "tasks.jsonl", _records(3))

    with pytest.raises(ApplicationError, match="Unknown import kind"):
        batch_import(path=path, name="b", kind="no-such-kind")

    assert gc.isenabled()


def test_a_caller_that_turned_the_collector_off_keeps_it_off(tmp_path):
    path = write_jsonl(tmp_path / "tasks.jsonl", _records(3))
    gc.disable()
    try:
        report = batch_import(path=path, name="b", kind="interfeedback")
        assert report.status == "imported", report.render()
        assert not gc.isenabled()
    finally:
        gc.enable()
