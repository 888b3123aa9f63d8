"""A reservation's writes: one statement on PostgreSQL, the ORM's saves elsewhere, and the same rows either way (a
field the statement got wrong would bias a session silently: this compares every column)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction

from annotate.assignments import lease_end
from annotate.models import Assignment, Round, Session, WorkItem
from annotate.queue import services as queue_services
from annotate.queue.reservation import reservation_save
from annotate.sessions.services import session_new
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db

# Columns that differ between two reservations by design: the rows' ids and what they point at, and the times.
PER_RESERVATION = {"id", "work_item_id", "annotator_id", "assignment_id", "session_id", "task_id", "created_at",
                   "started_at", "lease_expires_at"}


def reserved(item: WorkItem, one_statement: bool):
    annotator = UserFactory()
    assignment = Assignment(work_item=item, annotator=annotator, lease_expires_at=lease_end(), position=1)
    session, first_round = session_new(assignment=assignment) if item.task_id else (None, None)
    with transaction.atomic():
        WorkItem.objects.select_for_update().get(pk=item.pk)
        reservation_save(item, assignment, session, first_round, one_statement=one_statement)
    return assignment, session, first_round


def columns(instance) -> dict:
    row = type(instance).objects.filter(pk=instance.pk).values().get()
    return {name: value for name, value in row.items() if name not in PER_RESERVATION}


def one_statement_ways():
    return [False, True] if connection.vendor == "postgresql" else [False]


def test_both_ways_write_the_same_rows_and_leave_the_instances_saved(django_assert_num_queries):
    if connection.vendor != "postgresql":
        pytest.skip("the one-statement way is PostgreSQL's (data-modifying CTEs)")
    batch = make_batch(models=[ModelConfigFactory()], tasks=2)
    first, second = WorkItem.objects.filter(batch=batch).select_related("model_config").order_by("id")
    rows = {}
    for item, one_statement in ((first, False), (second, True)):
        assignment, session, first_round = reserved(item, one_statement)
        for instance in (assignment, session, first_round):
            assert instance.pk is not None and not instance._state.adding and instance._state.db == "default"
        with django_assert_num_queries(0):  # the relations are the instances themselves, as save() leaves them
            assert assignment.session is session and session.assignment is assignment
            assert first_round.session is session and session.model_config == item.model_config
        assert Session.objects.get(pk=session.pk).assignment_id == assignment.pk
        assert Round.objects.get(pk=first_round.pk).session_id == session.pk
        assert WorkItem.objects.get(pk=item.pk).active_count == 1
        rows[one_statement] = [columns(assignment), columns(session), columns(first_round)]
        saved = Assignment.objects.get(pk=assignment.pk)
        assert abs(saved.created_at - assignment.created_at) < timedelta(seconds=1)
        assert abs(saved.lease_expires_at - assignment.lease_expires_at) < timedelta(microseconds=1)
    assert rows[True] == rows[False]
    assert Round.objects.filter(session__batch=batch).count() == 2  # round 0 once per session


@pytest.mark.usefixtures("no_dispatch")
def test_a_conversation_to_rate_gets_an_assignment_and_no_session(fire_batch):
    for one_statement in one_statement_ways():
        item = WorkItem.objects.filter(batch=fire_batch, active_count=0).order_by("id").first()
        assignment, session, _ = reserved(item, one_statement)
        assert session is None and assignment.pk is not None
        assert WorkItem.objects.get(pk=item.pk).active_count == 1
        assert not Session.objects.filter(assignment_id=assignment.pk).exists()


def test_round_zero_is_queued_once_after_the_reservation_commits(sent_tasks, django_capture_on_commit_callbacks):
    """The model is asked for round 0 exactly once, and only once the reservation's transaction is committed."""
    batch = make_batch(models=[ModelConfigFactory()], tasks=3)
    with django_capture_on_commit_callbacks(execute=True) as on_commit:
        assignment = queue_services.assignment_next(annotator=UserFactory(), batch=batch)
        assert sent_tasks == []
    assert len(on_commit) == 1
    first_round = Round.objects.get(session__assignment=assignment)
    assert [args for _, args, _ in sent_tasks] == [[first_round.pk]]
