"""Repeated tasks: an annotator sees a task at most once, with any model, unless the batch allows
repeats; then a task comes back with another model only while its answer has not been revealed to them, and never
while their session of it is under way. Driven through the real queue and, where the answer is revealed, the real
session engine."""

from __future__ import annotations

import importlib
import json
from collections import defaultdict
from datetime import timedelta

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotate.assignments import assignment_skip, assignments_expire
from annotate.models import Assignment, Batch, Round, Session, Task, User, WorkItem
from annotate.queue.services import assignment_next
from evaluation.exports import registry as exports
from evaluation.interfeedback import selectors
from tests.annotate.helpers import finish, run_pending_round, send_feedback
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


def reveal_and_finish(assignment: Assignment) -> None:
    """Run the session as an annotator would: the simulated model stays wrong in rounds 0-2, the ground truth is
    revealed for round 3, where it is told the answer and gets it right."""
    session = Session.objects.get(assignment=assignment)
    run_pending_round(session)
    for _ in range(session.batch.max_rounds):
        send_feedback(session)
    session.refresh_from_db()
    assert session.status == Session.Status.COMPLETED and session.revealed_at is not None


def walk(annotators: list[User], batch: Batch | None) -> dict[int, list[tuple[int, int]]]:
    """Each annotator in turn asks for the next item and completes it (every other one by the full session with
    its reveal, the rest at once), until nobody gets anything. Returns each annotator's (task, model) pairs."""
    served: dict[int, list[tuple[int, int]]] = defaultdict(list)
    while True:
        progressed = False
        for annotator in annotators:
            assignment = assignment_next(annotator=annotator, batch=batch)
            if assignment is None:
                continue
            item = assignment.work_item
            served[annotator.id].append((item.task_id, item.model_config_id))
            (reveal_and_finish if len(served[annotator.id]) % 2 else finish)(assignment)
            progressed = True
        if not progressed:
            return served


def tasks_served_twice(served: dict[int, list[tuple[int, int]]]) -> dict[int, list[int]]:
    repeats = {}
    for annotator_id, pairs in served.items():
        tasks = [task for task, _ in pairs]
        if len(tasks) != len(set(tasks)):
            repeats[annotator_id] = tasks
    return repeats


def three_model_batch(**fields) -> Batch:
    """3 models x 4 tasks, K = 2: each task needs 6 people when nobody may see it twice."""
    batch = make_batch(models=[ModelConfigFactory() for _ in range(3)], tasks=4, overlap=2)
    Batch.objects.filter(pk=batch.pk).update(**fields)
    batch.refresh_from_db()
    return batch


# --- the default: each task once per annotator ---------------------------------------------------------------------


@pytest.mark.parametrize("path", ["batch", "any batch", "gold", "crowd"])
def test_by_default_nobody_gets_a_task_twice_and_the_overlap_is_still_met(path):
    batch = three_model_batch()
    annotators = [UserFactory() for _ in range(7)]  # one more than a task needs
    ask_in = batch
    if path == "any batch":
        ask_in = None
        make_batch(models=[ModelConfigFactory()], tasks=2, overlap=1)  # another batch open to them
    elif path == "gold":  # the ORM-built preference tiers
        Task.objects.filter(pk=batch.tasks.order_by("id").first().pk).update(is_gold=True)
        Batch.objects.filter(pk=batch.pk).update(gold_rate=0.3)
        batch.refresh_from_db()
    elif path == "crowd":  # invited participants, served from their batch without naming it
        User.objects.filter(pk__in=[a.pk for a in annotators]).update(crowd_batch=batch)
        annotators = list(User.objects.filter(pk__in=[a.pk for a in annotators]).order_by("id"))
        ask_in = None

    served = walk(annotators, ask_in)

    assert tasks_served_twice(served) == {}
    assert set(WorkItem.objects.filter(batch=batch).values_list("completed_count", "active_count")) == {(2, 0)}
    sessions = Session.objects.filter(batch=batch)
    assert sessions.count() == 4 * 3 * 2 and sessions.exclude(revealed_at=None).exists()


def test_pinned_items_of_a_task_already_had_are_not_served():
    batch = three_model_batch()
    pinned_to, others = UserFactory(), [UserFactory() for _ in range(6)]
    task = batch.tasks.order_by("id").first()
    WorkItem.objects.filter(task=task).update(pinned_to=pinned_to)  # the task with all three models

    served = walk([pinned_to, *others], batch)

    assert tasks_served_twice(served) == {}
    assert [t for t, _ in served[pinned_to.id]].count(task.id) == 1  # one of the three, then no more
    assert not any(t == task.id for other in others for t, _ in served[other.id])  # pinned: theirs only
    assert WorkItem.objects.filter(task=task, completed_count=0).count() == 2  # left for the researcher to unpin


@pytest.mark.parametrize("leave", ["skip", "lease expired"])
def test_a_task_left_unfinished_still_counts_as_seen(leave):
    batch = make_batch(models=[ModelConfigFactory(), ModelConfigFactory()], tasks=1, overlap=1)
    annotator = UserFactory()
    first = assignment_next(annotator=annotator, batch=batch)
    if leave == "skip":
        assignment_skip(assignment=first, reason="image does not load")
    else:
        Assignment.objects.filter(pk=first.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        assert assignments_expire() == 1

    assert assignment_next(annotator=annotator, batch=batch) is None  # they saw the question
    assert assignment_next(annotator=UserFactory(), batch=batch) is not None  # the other model's pair is free


# --- batches that allow repeats -------------------------------------------------------------------------------------


def allow_repeats(batch: Batch) -> None:
    """Repeats allowed, and the same task back to back too: nothing but the repeat rule holds a task back."""
    batch.allow_repeat_tasks = batch.allow_same_task_back_to_back = True
    batch.save(update_fields=["allow_repeat_tasks", "allow_same_task_back_to_back"])


@pytest.mark.parametrize("ask_in_batch", [True, False])
def test_with_repeats_a_task_comes_back_until_its_answer_is_revealed(ask_in_batch):
    batch = make_batch(models=[ModelConfigFactory() for _ in range(3)], tasks=1, overlap=1)
    allow_repeats(batch)
    batch.refresh_from_db()
    annotator, ask_in = UserFactory(), batch if ask_in_batch else None

    first = assignment_next(annotator=annotator, batch=ask_in)
    finish(first)  # right before the last round: the answer was never shown
    second = assignment_next(annotator=annotator, batch=ask_in)
    assert second is not None and second.work_item.model_config_id != first.work_item.model_config_id
    reveal_and_finish(second)

    assert assignment_next(annotator=annotator, batch=ask_in) is None  # the third model's pair: not after a reveal
    third = assignment_next(annotator=UserFactory(), batch=ask_in)
    assert third is not None and third.work_item.task_id == first.work_item.task_id


def test_with_repeats_a_skipped_task_may_come_back_but_a_revealed_then_skipped_one_not():
    batch = make_batch(models=[ModelConfigFactory() for _ in range(3)], tasks=1, overlap=1)
    allow_repeats(batch)
    annotator = UserFactory()
    skipped = assignment_next(annotator=annotator, batch=batch)
    assignment_skip(assignment=skipped, reason="image does not load")

    again = assignment_next(annotator=annotator, batch=batch)
    assert again is not None and again.work_item_id != skipped.work_item_id
    session = Session.objects.get(assignment=again)
    run_pending_round(session)
    send_feedback(session)
    send_feedback(session)  # round 2 is wrong too: the ground truth is shown for round 3
    session.refresh_from_db()
    assert session.status == Session.Status.AWAITING_FEEDBACK and session.revealed_at is not None
    assignment_skip(assignment=again, reason="no time left")

    assert assignment_next(annotator=annotator, batch=batch) is None


def test_with_repeats_a_task_is_never_served_while_its_session_is_under_way():
    batch = make_batch(models=[ModelConfigFactory(), ModelConfigFactory()], tasks=1, overlap=1)
    allow_repeats(batch)
    elsewhere = make_batch(models=[ModelConfigFactory()], tasks=1)
    annotator = UserFactory()
    first = assignment_next(annotator=annotator, batch=batch)
    # One item at a time: while its session is under way, asking again (here, or in another batch) resumes it.
    assert assignment_next(annotator=annotator, batch=elsewhere).pk == first.pk
    assert assignment_next(annotator=annotator, batch=batch).pk == first.pk

    finish(first)  # done without the answer shown: the other model's pair may come now
    second = assignment_next(annotator=annotator, batch=batch)
    assert second is not None and second.work_item.task_id == first.work_item.task_id


def test_with_repeats_a_manual_task_does_not_come_back():
    """A manual task shows its reference answer for judging from round 0: its answer has been seen."""
    batch = make_batch(models=[ModelConfigFactory(), ModelConfigFactory()], tasks=1, overlap=1,
                       answer_type=Task.AnswerType.MANUAL, ground_truth="a cat on a mat")
    allow_repeats(batch)
    annotator = UserFactory()
    finish(assignment_next(annotator=annotator, batch=batch))

    assert assignment_next(annotator=annotator, batch=batch) is None


@pytest.mark.parametrize("path", ["batch", "gold"])
def test_with_repeats_nobody_is_served_a_task_after_its_reveal(path):
    batch = three_model_batch(allow_repeat_tasks=True)
    if path == "gold":
        Task.objects.filter(pk=batch.tasks.order_by("id").first().pk).update(is_gold=True)
        Batch.objects.filter(pk=batch.pk).update(gold_rate=0.3)
        batch.refresh_from_db()
    annotators = [UserFactory() for _ in range(4)]

    served = walk(annotators, batch)

    first_reveal, last_start = {}, {}
    for annotator_id, task_id, started_at, revealed_at in Session.objects.values_list(
            "annotator_id", "task_id", "started_at", "revealed_at"):
        key = (annotator_id, task_id)
        last_start[key] = max(last_start.get(key, started_at), started_at)
        if revealed_at is not None:
            first_reveal[key] = min(first_reveal.get(key, revealed_at), revealed_at)
    assert first_reveal, "some sessions revealed their answer"
    served_after_reveal = [key for key, revealed_at in first_reveal.items() if last_start[key] > revealed_at]
    assert served_after_reveal == []
    assert tasks_served_twice(served) != {}  # repeats did happen (after sessions that revealed nothing)


# --- query counts ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("repeats", [False, True])
def test_next_item_query_count_does_not_grow_with_history(repeats):
    batch = make_batch(models=[ModelConfigFactory() for _ in range(3)], tasks=12, overlap=1)
    Batch.objects.filter(pk=batch.pk).update(allow_repeat_tasks=repeats)
    batch.refresh_from_db()
    annotator, counts = UserFactory(), []
    for _ in range(10):
        with CaptureQueriesContext(connection) as queries:
            assignment = assignment_next(annotator=annotator, batch=batch)
        assert assignment is not None
        counts.append(len(queries))
        finish(assignment)
    # The first reservation counts them in among the batch's annotators (the model they start with:
    # annotate.queue.order), once: an update and a read. On PostgreSQL the first read finds them new to a batch of
    # several models, and the request is served again under the lock on their row (its transaction's two markers
    # and the lock; SQLite serves every request so).
    extra = 2 + (3 if connection.vendor == "postgresql" else 0)
    assert counts[0] == counts[1] + extra and set(counts[1:]) == {counts[1]}, counts


# --- the reveal time and the export ---------------------------------------------------------------------------------


def test_reveal_time_is_set_when_the_last_round_opens():
    batch = make_batch(models=[ModelConfigFactory()], tasks=1)
    session = Session.objects.get(assignment=assignment_next(annotator=UserFactory(), batch=batch))
    run_pending_round(session)
    send_feedback(session)
    session.refresh_from_db()
    assert session.revealed_at is None  # round 1 done, round 2 still without the answer
    before = timezone.now()
    send_feedback(session)
    session.refresh_from_db()
    assert session.status == Session.Status.AWAITING_FEEDBACK and before <= session.revealed_at <= timezone.now()
    revealed_at = session.revealed_at
    send_feedback(session)
    session.refresh_from_db()
    assert session.status == Session.Status.COMPLETED and session.revealed_at == revealed_at


def test_a_session_right_before_the_last_round_reveals_nothing():
    batch = make_batch(models=[ModelConfigFactory(backend_settings={"chunk_delay": 0, "correct_from_round": 1})])
    session = Session.objects.get(assignment=assignment_next(annotator=UserFactory(), batch=batch))
    run_pending_round(session)
    send_feedback(session)
    session.refresh_from_db()
    assert (session.status, session.corrected_round, session.revealed_at) == (Session.Status.COMPLETED, 1, None)


def _session(batch, task, model, annotator, started_at, revealed_at=None):
    session = Session.objects.create(batch=batch, task=task, model_config=model, annotator=annotator,
                                     status=Session.Status.COMPLETED, corrected_round=None,
                                     completed_at=started_at + timedelta(minutes=5), revealed_at=revealed_at)
    Session.objects.filter(pk=session.pk).update(started_at=started_at)  # auto_now_add on create
    return session.pk


def test_export_marks_sessions_that_followed_a_reveal(django_assert_max_num_queries):
    """Sessions from before the rule (or a batch that allowed it): the export says which followed a reveal."""
    models = [ModelConfigFactory(name="model-a"), ModelConfigFactory(name="model-b"), ModelConfigFactory()]
    batch = make_batch(models=models, tasks=2)
    task, other_task = batch.tasks.order_by("id")
    alice, bob = UserFactory(), UserFactory()
    t0 = timezone.now() - timedelta(hours=1)
    revealing = _session(batch, task, models[0], alice, t0, revealed_at=t0 + timedelta(minutes=3))
    after = _session(batch, task, models[1], alice, t0 + timedelta(minutes=10))
    concurrent = _session(batch, task, models[2], alice, t0 + timedelta(minutes=1))  # started before the reveal
    someone_else = _session(batch, task, models[1], bob, t0 + timedelta(minutes=10))
    other = _session(batch, other_task, models[0], alice, t0 + timedelta(minutes=10))

    with django_assert_max_num_queries(4):  # sessions, rounds, images: the flag adds no query
        exported = {s.id: s.follows_reveal for s in selectors.export_sessions(batch)}
    assert exported == {revealing: False, after: True, concurrent: False, someone_else: False, other: False}

    for fmt, key in (("jsonl", "session_id"), ("fire", "id")):
        records = [json.loads(line) for line in exports.build_export(batch, "sessions", fmt).read().splitlines()]
        flags = {r[key] if fmt == "jsonl" else int(r[key].rsplit("-", 1)[1]): r["follows_reveal"] for r in records}
        assert flags == exported


def test_migration_backfills_the_reveal_time():
    backfill = importlib.import_module("annotate.migrations.0008_repeat_tasks").backfill_revealed_at
    batch = make_batch(models=[ModelConfigFactory()], tasks=1)
    task, model = batch.tasks.get(), batch.models_to_evaluate.get()
    t0 = timezone.now() - timedelta(hours=1)

    def session_with_rounds(status, last_index, finished):
        session = Session.objects.create(batch=batch, task=task, model_config=model, status=status)
        for index in range(last_index + 1):
            Round.objects.create(session=session, index=index, finished_at=finished(index))
        return session

    at = {i: t0 + timedelta(minutes=i) for i in range(4)}
    reached_last = session_with_rounds(Session.Status.COMPLETED, 3, at.get)
    awaiting_last = session_with_rounds(Session.Status.AWAITING_FEEDBACK, 2, at.get)
    no_finish_time = session_with_rounds(Session.Status.COMPLETED, 3, lambda i: None)
    awaiting_round_2 = session_with_rounds(Session.Status.AWAITING_FEEDBACK, 1, at.get)
    corrected_early = session_with_rounds(Session.Status.COMPLETED, 1, at.get)
    already = session_with_rounds(Session.Status.COMPLETED, 3, at.get)
    Session.objects.filter(pk=already.pk).update(revealed_at=t0)

    backfill(apps, None)

    revealed = dict(Session.objects.values_list("id", "revealed_at"))
    last_round_sent = Round.objects.get(session=no_finish_time, index=3).created_at
    assert revealed == {reached_last.pk: at[2], awaiting_last.pk: at[2], no_finish_time.pk: last_round_sent,
                        awaiting_round_2.pk: None, corrected_early.pk: None, already.pk: t0}

