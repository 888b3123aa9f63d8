"""A reservation's writes: one statement on PostgreSQL, the ORM's saves elsewhere, and the same rows either way (a
field the statement got wrong would bias a session silently: this compares every column)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.db.models import F

from annotate.models import Assignment, Round, Session, User, WorkItem
from annotate.queue import services as queue_services
from annotate.queue.items import CONVERSATION_KINDS
from annotate.queue.reservation import Claim, RaceLost, reservation_take
from tests.annotate.helpers import blocked_backends_seen
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db

# Columns that differ between two reservations by design: the rows' ids and what they point at, and the times.
PER_RESERVATION = {"id", "work_item_id", "annotator_id", "assignment_id", "session_id", "task_id", "created_at",
                   "started_at", "lease_expires_at"}


def take(batch, one_statement: bool, annotator=None, version=None):
    """The first free ordinary item of the batch taken for a new annotator (or ``annotator``), as the queue takes
    it, with the serving version they have (or ``version``)."""
    annotator = annotator or UserFactory()
    claim = Claim(annotator.pk, annotator.serving_version if version is None else version, 1, batch.pk,
                  with_session=batch.kind not in CONVERSATION_KINDS)
    shape, values = queue_services._free_walk("ordinary", batch, annotator.pk, last_task_id=None, model_id=None)
    return reservation_take(queue_services._free_items, shape, values, claim, one_statement=one_statement)


def columns(instance) -> dict:
    row = type(instance).objects.filter(pk=instance.pk).values().get()
    return {name: value for name, value in row.items() if name not in PER_RESERVATION}


def one_statement_ways():
    return [False, True] if connection.vendor == "postgresql" else [False]


def test_both_ways_write_the_same_rows_and_leave_the_instances_saved(django_assert_num_queries):
    if connection.vendor != "postgresql":
        pytest.skip("the one-statement way is PostgreSQL's (data-modifying CTEs)")
    batch = make_batch(models=[ModelConfigFactory()], tasks=2)
    rows = {}
    for one_statement in (False, True):
        annotator = UserFactory()
        reserved = take(batch, one_statement, annotator)
        item, assignment, session, first_round = (reserved.item, reserved.assignment, reserved.session,
                                                  reserved.first_round)
        for instance in (assignment, session, first_round):
            assert instance.pk is not None and not instance._state.adding and instance._state.db == "default"
        with django_assert_num_queries(0):  # the relations are the instances themselves, as save() leaves them
            assert assignment.session is session and session.assignment is assignment
            assert assignment.work_item is item and item.model_config is not None
            assert first_round.session is session and session.model_config == item.model_config
            assert session.task_id == item.task_id
        assert Session.objects.get(pk=session.pk).assignment_id == assignment.pk
        assert Session.objects.get(pk=session.pk).task_id == item.task_id
        assert Assignment.objects.get(pk=assignment.pk).work_item_id == item.pk
        assert Round.objects.get(pk=first_round.pk).session_id == session.pk
        assert WorkItem.objects.get(pk=item.pk).active_count == 1
        assert User.objects.get(pk=annotator.pk).serving_version == 1
        rows[one_statement] = [columns(assignment), columns(session), columns(first_round)]
        saved = Assignment.objects.get(pk=assignment.pk)
        assert abs(saved.created_at - assignment.created_at) < timedelta(seconds=1)
        assert abs(saved.lease_expires_at - assignment.lease_expires_at) < timedelta(microseconds=1)
    assert rows[True] == rows[False]
    assert Round.objects.filter(session__batch=batch).count() == 2  # round 0 once per session


@pytest.mark.usefixtures("no_dispatch")
def test_a_conversation_to_rate_gets_an_assignment_and_no_session(fire_batch):
    for one_statement in one_statement_ways():
        counted = dict(WorkItem.objects.filter(batch=fire_batch).values_list("id", "active_count"))
        reserved = take(fire_batch, one_statement)
        assert reserved.session is None and reserved.assignment.pk is not None
        assert WorkItem.objects.get(pk=reserved.item.pk).active_count == counted[reserved.item.pk] + 1
        assert not Session.objects.filter(assignment_id=reserved.assignment.pk).exists()


def test_a_version_that_moved_on_writes_nothing():
    """Another request of the person reserved since this one read their version: this one takes nothing (no item
    counted, no assignment, no session, the version left as the winner set it), and says so."""
    batch = make_batch(models=[ModelConfigFactory()], tasks=3)
    for one_statement in one_statement_ways():
        annotator = UserFactory()
        take(batch, one_statement, annotator)  # the winner: version 0 -> 1
        counts = (Assignment.objects.count(), Session.objects.count(), Round.objects.count(),
                  list(WorkItem.objects.order_by("id").values_list("active_count", flat=True)))
        with pytest.raises(RaceLost):
            take(batch, one_statement, annotator, version=0)
        assert counts == (Assignment.objects.count(), Session.objects.count(), Round.objects.count(),
                          list(WorkItem.objects.order_by("id").values_list("active_count", flat=True)))
        assert User.objects.get(pk=annotator.pk).serving_version == 1


def test_nothing_free_takes_nothing_and_leaves_the_version():
    batch = make_batch(models=[ModelConfigFactory()], tasks=1, overlap=1)
    take(batch, False)
    for one_statement in one_statement_ways():
        annotator = UserFactory()
        assert take(batch, one_statement, annotator) is None
        assert User.objects.get(pk=annotator.pk).serving_version == 0


def test_round_zero_is_queued_once_after_the_reservation_commits(sent_tasks, django_capture_on_commit_callbacks):
    """The model is asked for round 0 exactly once, and only once the reservation's transaction is committed."""
    batch = make_batch(models=[ModelConfigFactory()], tasks=3)
    with django_capture_on_commit_callbacks(execute=True) as on_commit:
        assignment = queue_services.assignment_next(annotator=UserFactory(), batch=batch)
        assert sent_tasks == []
    assert len(on_commit) == 1
    first_round = Round.objects.get(session__assignment=assignment)
    assert [args for _, args, _ in sent_tasks] == [[first_round.pk]]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="the one statement is PostgreSQL's")
@pytest.mark.parametrize("other_reserved", [True, False])
def test_a_request_waiting_for_the_person_holds_no_item(other_reserved):
    """Another request of the person holds their row (a reservation of theirs under way): this one waits for it
    before locking any item, so the items stay free for that request's walk. Then it loses (the other reserved and
    bumped the version) or goes on (the other reserved nothing)."""
    batch = make_batch(models=[ModelConfigFactory()], tasks=3)
    annotator = UserFactory()
    outcome: list = []

    def waiting_take():
        try:
            outcome.append(take(batch, True, annotator, version=0))
        except RaceLost as lost:
            outcome.append(lost)
        finally:
            connections.close_all()

    with transaction.atomic():  # the other request, holding the person's row
        User.objects.select_for_update(no_key=True).filter(pk=annotator.pk).get()
        thread = threading.Thread(target=waiting_take)
        thread.start()
        waited = blocked_backends_seen(1, timeout=10)
        free = WorkItem.objects.filter(batch=batch).select_for_update(skip_locked=True).count()
        if other_reserved:
            User.objects.filter(pk=annotator.pk).update(serving_version=F("serving_version") + 1)
    thread.join(timeout=30)
    assert waited and free == 3  # it waited, and held none of the three items meanwhile
    if other_reserved:
        assert isinstance(outcome[0], RaceLost) and not Assignment.objects.filter(annotator=annotator).exists()
    else:
        assert outcome[0].assignment.annotator_id == annotator.pk
        assert User.objects.get(pk=annotator.pk).serving_version == 1

