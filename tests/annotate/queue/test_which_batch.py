"""Which batch serves an annotator who names none: a newcomer gets the batch of the first open item of all their
batches in serving order (items pinned to them, then the pairs closest to K completed sessions, then the batches'
order); a returning annotator stays with their latest batch while it has items for them. The queue picks that
batch from each batch's own first item, never by sorting every batch's items together."""

from __future__ import annotations

import pytest
from django.db.models import F

from annotate.models import User, WorkItem
from annotate.queue.services import assignment_next
from tests.annotate.helpers import finish
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


@pytest.fixture
def earlier_and_later():
    """Two open batches naming no one, with 3 tasks each and overlap 2; the earlier one was created first."""
    earlier = make_batch(models=[ModelConfigFactory()], tasks=3, overlap=2)
    later = make_batch(models=[ModelConfigFactory()], tasks=3, overlap=2)
    return earlier, later


def annotator() -> User:
    return UserFactory(role=User.Role.ANNOTATOR)


def test_a_newcomer_gets_the_first_item_of_the_earliest_batch_when_nothing_is_under_way(earlier_and_later):
    earlier, _ = earlier_and_later
    first = WorkItem.objects.filter(batch=earlier).order_by("id").first()
    assert assignment_next(annotator=annotator()).work_item_id == first.pk


def test_a_newcomer_gets_the_pair_closest_to_k_whatever_its_batch(earlier_and_later):
    _, later = earlier_and_later
    almost_done = WorkItem.objects.filter(batch=later).order_by("-id").first()
    WorkItem.objects.filter(pk=almost_done.pk).update(completed_count=F("completed_count") + 1)
    assert assignment_next(annotator=annotator()).work_item_id == almost_done.pk


def test_an_item_pinned_to_the_newcomer_comes_first_whatever_its_batch(earlier_and_later):
    earlier, later = earlier_and_later
    WorkItem.objects.filter(batch=earlier).update(completed_count=1)  # closer to K than anything in `later`
    newcomer = annotator()
    pinned = WorkItem.objects.filter(batch=later).order_by("-id").first()
    WorkItem.objects.filter(pk=pinned.pk).update(pinned_to=newcomer)
    assert assignment_next(annotator=newcomer).work_item_id == pinned.pk


def test_a_returning_annotator_stays_with_their_batch_until_it_has_nothing_for_them(earlier_and_later):
    earlier, later = earlier_and_later
    person = annotator()
    first = assignment_next(annotator=person)
    assert first.work_item.batch_id == earlier.pk
    finish(first)
    # The later batch's pairs are now closer to K, but the person stays with the batch they are working on.
    WorkItem.objects.filter(batch=later).update(completed_count=1)
    served = []
    while (assignment := assignment_next(annotator=person)) is not None:
        served.append(assignment.work_item.batch_id)
        finish(assignment)
    assert served == [earlier.pk, earlier.pk] + [later.pk] * 3
