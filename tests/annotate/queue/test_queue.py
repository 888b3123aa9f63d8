"""The next-item queue: overlap K, breadth-first order, no repeats, leases, skips, pinning, concurrency."""

from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from annotate.assignments import assignment_skip, assignments_expire
from annotate.models import Assignment, Session, WorkItem
from annotate.queue.services import assignment_next
from tests.annotate.helpers import all_at_once, finish
from tests.factories import ModelConfigFactory, UserFactory, make_batch


@pytest.mark.django_db
def test_overlap_is_met_and_nobody_gets_a_pair_twice(no_dispatch):
    models = [ModelConfigFactory(), ModelConfigFactory()]
    batch = make_batch(models=models, tasks=3, overlap=2)
    annotators = [UserFactory() for _ in range(4)]  # 2 models x K=2: each task needs 4 people (none sees it twice)
    served = []
    for _ in range(10):
        for annotator in annotators:
            assignment = assignment_next(annotator=annotator, batch=batch)
            if assignment:
                served.append((annotator.id, assignment.work_item_id))
                finish(assignment)
    assert len(served) == len(set(served)) == 3 * 2 * 2
    assert set(WorkItem.objects.values_list("completed_count", flat=True)) == {2}
    assert all(assignment_next(annotator=a, batch=batch) is None for a in annotators)


@pytest.mark.django_db
def test_breadth_first_and_not_the_same_task_back_to_back(no_dispatch):
    models = [ModelConfigFactory(), ModelConfigFactory()]
    batch = make_batch(models=models, tasks=2, overlap=2)
    first = assignment_next(annotator=UserFactory(), batch=batch)
    finish(first)
    # The next annotator starts with the other model (annotate.queue.order); the one after with the first model
    # again, and gets the pair that already has one completed session (closest to done).
    second = assignment_next(annotator=UserFactory(), batch=batch)
    assert second.work_item.model_config_id != first.work_item.model_config_id
    third = assignment_next(annotator=UserFactory(), batch=batch)
    assert third.work_item_id == first.work_item_id
    # The first annotator is not served the same task with the other model right away.
    again = assignment_next(annotator=first.annotator, batch=batch)
    assert again.work_item.task_id != first.work_item.task_id


@pytest.mark.django_db
def test_active_assignment_is_resumed_not_duplicated(no_dispatch):
    batch = make_batch(models=[ModelConfigFactory()], tasks=3)
    annotator = UserFactory()
    a = assignment_next(annotator=annotator, batch=batch)
    b = assignment_next(annotator=annotator, batch=batch)
    assert a.pk == b.pk and Assignment.objects.count() == 1


@pytest.mark.django_db
def test_expired_leases_are_served_again(no_dispatch):
    batch = make_batch(models=[ModelConfigFactory()], tasks=1)
    walker, other = UserFactory(), UserFactory()
    stale = assignment_next(annotator=walker, batch=batch)
    assert assignment_next(annotator=other, batch=batch) is None  # reserved
    Assignment.objects.filter(pk=stale.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    fresh = assignment_next(annotator=other, batch=batch)
    assert fresh is not None and fresh.work_item_id == stale.work_item_id
    stale.refresh_from_db()
    assert stale.status == Assignment.Status.EXPIRED
    assert Session.objects.get(assignment=stale).status == Session.Status.ABANDONED
    assert assignments_expire() == 0


@pytest.mark.django_db
def test_expired_leases_are_returned_by_the_beat_task(no_dispatch, settings):
    """With items left, the next-item path leaves expired leases alone; Celery beat sweeps them every few seconds
    (and the queue itself only when it finds nothing, as above)."""
    from annotate.queue.tasks import assignments_expire_task

    batch = make_batch(models=[ModelConfigFactory()], tasks=5)
    walker, other = UserFactory(), UserFactory()
    stale = assignment_next(annotator=walker, batch=batch)
    Assignment.objects.filter(pk=stale.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assignment_next(annotator=other, batch=batch)
    stale.refresh_from_db()
    assert stale.status == Assignment.Status.ACTIVE  # other items were free: no sweep on the way
    assert assignments_expire_task() == 1
    stale.refresh_from_db()
    assert stale.status == Assignment.Status.EXPIRED
    beat = settings.CELERY_BEAT_SCHEDULE["assignments-expire"]
    assert beat["task"] == "annotate.tasks.assignments_expire" and beat["schedule"] <= 10


@pytest.mark.django_db
def test_skipped_items_go_to_others(no_dispatch):
    batch = make_batch(models=[ModelConfigFactory()], tasks=1)
    skipper, other = UserFactory(), UserFactory()
    a = assignment_next(annotator=skipper, batch=batch)
    with pytest.raises(Exception, match="Say why"):
        assignment_skip(assignment=a, reason=" ")
    assignment_skip(assignment=a, reason="image does not load")
    assert assignment_next(annotator=skipper, batch=batch) is None
    assert assignment_next(annotator=other, batch=batch).work_item_id == a.work_item_id


@pytest.mark.django_db
def test_pinned_items_go_to_their_annotator_first_and_only(no_dispatch):
    batch = make_batch(models=[ModelConfigFactory()], tasks=3)
    pinned_to, other = UserFactory(), UserFactory()
    item = WorkItem.objects.order_by("-id").first()
    WorkItem.objects.filter(pk=item.pk).update(pinned_to=pinned_to)
    assert assignment_next(annotator=pinned_to, batch=batch).work_item_id == item.pk
    served = []
    while (a := assignment_next(annotator=other, batch=batch)) is not None:
        served.append(a.work_item_id)
        finish(a)
    assert item.pk not in served and len(served) == 2


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_annotators_get_disjoint_reservations_and_exact_overlap(no_dispatch):
    models = [ModelConfigFactory(), ModelConfigFactory()]
    overlap = 3
    batch = make_batch(models=models, tasks=10, overlap=overlap)
    annotators = [UserFactory() for _ in range(20)]

    def walk(annotator):
        served = []
        while (assignment := assignment_next(annotator=annotator, batch=batch)) is not None:
            served.append((annotator.id, assignment.work_item_id))
            finish(assignment)
        return served

    outcomes = all_at_once(walk, annotators)
    errors = [repr(o) for o in outcomes if isinstance(o, BaseException)]  # so a failure names itself
    served = [pair for o in outcomes if not isinstance(o, BaseException) for pair in o]
    assert errors == []
    assert len(served) == len(set(served)), "an annotator was served the same pair twice"
    per_item = Counter(item for _, item in served)
    assert set(per_item.values()) == {overlap} and len(per_item) == 20
    assert set(WorkItem.objects.values_list("completed_count", "active_count")) == {(overlap, 0)}
    assert connection.vendor in {"postgresql", "sqlite"}
