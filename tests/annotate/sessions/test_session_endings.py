"""How an abandoned session ended, as the annotator's page says it, and finishing an assignment counts once."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotate.assignments import assignment_complete, assignment_skip, assignments_expire
from annotate.models import Assignment, Session, WorkItem
from annotate.queue.services import assignment_next
from annotate.sessions.selectors import access_session, session_snapshot
from tests.factories import make_batch

pytestmark = pytest.mark.django_db


def _started(annotator, model):
    assignment = assignment_next(annotator=annotator, batch=make_batch(models=[model]))
    return assignment, assignment.session


def _snapshot(session):
    return session_snapshot(access_session(session.annotator, session.id))


def test_a_skipped_session_says_skipped(annotator, simulated_model, no_dispatch):
    assignment, session = _started(annotator, simulated_model)
    assignment_skip(assignment=assignment, reason="image does not load")
    snap = _snapshot(session)
    assert (snap["status"], snap["ended_as"]) == (Session.Status.ABANDONED, "skipped")


def test_a_session_left_until_its_lease_ran_out_says_expired(annotator, simulated_model, no_dispatch):
    assignment, session = _started(annotator, simulated_model)
    Assignment.objects.filter(pk=assignment.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert assignments_expire() == 1
    snap = _snapshot(session)
    assert (snap["status"], snap["ended_as"]) == (Session.Status.ABANDONED, "expired")


def test_an_abandoned_session_whose_assignment_is_gone_says_expired(annotator, simulated_model, no_dispatch):
    assignment, session = _started(annotator, simulated_model)
    assignment_skip(assignment=assignment, reason="image does not load")
    Assignment.objects.filter(pk=assignment.pk).delete()  # the session keeps no assignment (SET_NULL)
    snap = _snapshot(session)
    assert (snap["status"], snap["ended_as"]) == (Session.Status.ABANDONED, "expired")
    assert "ground_truth" not in snap


def test_an_open_session_says_nothing_of_an_ending(annotator, simulated_model, no_dispatch):
    _, session = _started(annotator, simulated_model)
    assert "ended_as" not in _snapshot(session)


def test_finishing_an_assignment_counts_once_and_a_missing_one_counts_nothing(annotator, simulated_model,
                                                                              no_dispatch):
    assignment, _ = _started(annotator, simulated_model)
    item = WorkItem.objects.get(pk=assignment.work_item_id)
    assert (item.active_count, item.completed_count) == (1, 0)
    assignment_complete(assignment_id=assignment.pk + 1000)  # no such assignment
    item.refresh_from_db()
    assert (item.active_count, item.completed_count) == (1, 0)
    assignment_complete(assignment_id=assignment.pk)
    assignment_complete(assignment_id=assignment.pk)  # a redelivered completion
    item.refresh_from_db()
    assert (item.active_count, item.completed_count) == (0, 1)
