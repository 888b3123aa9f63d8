"""Can a batch's annotators finish it? Each task needs models x overlap different people (nobody is served a task
twice): the import report (dry run too), the batch report and the dashboard say when they cannot and how many
more are needed, and the dashboard then gives no ETA."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotate.imports.batches import batch_import
from annotate.models import Batch
from annotate.queue.services import assignment_next
from annotate.watch.selectors import batch_dashboard
from tests.annotate.helpers import finish
from tests.annotate.imports.files import task, write_jsonl
from tests.factories import ModelConfigFactory, UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


@pytest.fixture
def pilot_file(tmp_path):
    ModelConfigFactory(name="cap-a")
    ModelConfigFactory(name="cap-b")
    UserFactory(username="ann-1")
    UserFactory(username="ann-2")
    return write_jsonl(tmp_path / "tasks.jsonl", [task(f"t{i:02d}") for i in range(11)])


def pilot(pilot_file, *, dry_run=False, annotators="ann-1,ann-2", overlap=2):
    return batch_import(path=pilot_file, name="pilot", kind="interfeedback", dry_run=dry_run,
                        settings={"models": "cap-a,cap-b", "overlap": overlap, "annotators": annotators})


def test_the_import_report_says_how_many_more_people_are_needed(pilot_file):
    for dry_run in (True, False):
        report = pilot(pilot_file, dry_run=dry_run)
        assert report.ok and report.status == ("dry_run" if dry_run else "imported")
        assert report.capacity == {"people_per_unit": 4, "unit": "task", "annotators": 2, "more_needed": 2,
                                   "unservable": 0, "short": True}
        assert any("only 2 may work on this batch: 2 more are needed" in w for w in report.warnings), report.warnings
    assert Batch.objects.get(name="pilot").import_report["capacity"]["more_needed"] == 2


def test_enough_people_means_no_warning(pilot_file):
    UserFactory(username="ann-3")
    UserFactory(username="ann-4")
    report = pilot(pilot_file, dry_run=True, annotators="ann-1,ann-2,ann-3,ann-4")
    assert report.capacity["short"] is False and report.warnings == []
    # Open to every annotator account (and, later, to invited participants): counted as they are now.
    report = pilot(pilot_file, dry_run=True, annotators="*")
    assert report.capacity["annotators"] == 4 and not report.capacity["short"]


def test_the_report_and_the_dashboard_say_the_batch_cannot_be_finished(pilot_file, client, researcher):
    assert pilot(pilot_file).ok
    batch = Batch.objects.get(name="pilot")
    batch.members.add(researcher)
    people = list(batch.annotators.all())
    for person in people:  # each does what they can: every task once
        while (assignment := assignment_next(annotator=person, batch=batch)) is not None:
            finish(assignment)
    d = batch_dashboard(batch)
    assert d["totals"]["left"] == 22 and d["pace_per_hour"] > 0
    assert d["capacity"]["more_needed"] == 2 and d["capacity"]["unservable"] == 22
    assert d["eta_seconds"] is None  # never an ETA for work nobody can be served
    client.force_login(researcher)
    report = client.get(reverse("research-report", args=[batch.id])).content.decode()
    assert "cannot finish it" in report and "so 2 more are needed" in report
    dashboard = client.get(reverse("research-dashboard", args=[batch.id])).content.decode()
    assert 'id="capacity-more">2<' in dashboard and "none: the batch cannot be finished" in dashboard
