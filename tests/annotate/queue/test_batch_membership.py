"""A batch's people see only the batches they belong to (issue 31 item 2): an annotator named on a batch is never
served an item of a batch that does not name them, unless that batch is explicitly open to all annotators.
Annotators named on no batch (the demo's own users) are served the batches that name no one, as before."""

from __future__ import annotations

import pytest

from annotate.imports.batches import batch_settings_apply
from annotate.models import Assignment, Batch, User
from annotate.queue.services import assignment_next, nothing_to_serve, open_items_count
from tests.annotate.helpers import finish
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


@pytest.fixture
def two_batches():
    """Batch A names anna; batch B (like the demo batch) names no one; bob is named nowhere."""
    anna = UserFactory(username="anna", role=User.Role.ANNOTATOR)
    bob = UserFactory(username="bob", role=User.Role.ANNOTATOR)
    batch_b = make_batch(models=[ModelConfigFactory()], tasks=3)
    batch_a = make_batch(models=[ModelConfigFactory()], tasks=2)
    batch_settings_apply(batch=batch_a, settings={"annotators": "anna"})
    return batch_a, batch_b, anna, bob


def test_no_item_of_batch_b_is_served_to_someone_only_in_batch_a(two_batches):
    batch_a, batch_b, anna, _ = two_batches
    assert open_items_count(annotator=anna) == 2  # "Remaining" counts batch A's items only
    served = []
    while (assignment := assignment_next(annotator=anna)) is not None:
        served.append(assignment.work_item.batch_id)
        finish(assignment)
    assert served == [batch_a.pk, batch_a.pk]
    assert assignment_next(annotator=anna, batch=batch_b) is None  # not by asking for it either
    assert nothing_to_serve(annotator=anna).state == "done"
    assert nothing_to_serve(annotator=anna, batch=batch_b).state == "done"
    assert not Assignment.objects.filter(annotator=anna, work_item__batch=batch_b).exists()


def test_someone_named_nowhere_keeps_the_batches_that_name_no_one(two_batches):
    batch_a, batch_b, _, bob = two_batches
    assert open_items_count(annotator=bob) == 3
    assert assignment_next(annotator=bob).work_item.batch_id == batch_b.pk
    assert assignment_next(annotator=bob, batch=batch_a) is not None  # resumes the item of B under way
    assert not Assignment.objects.filter(annotator=bob, work_item__batch=batch_a).exists()


def test_a_batch_open_to_all_annotators_serves_the_people_of_other_batches_too(two_batches):
    batch_a, batch_b, anna, _ = two_batches
    batch_settings_apply(batch=batch_b, settings={"open_to_all_annotators": True})
    batch_b.refresh_from_db()
    assert batch_b.open_to_all_annotators
    assert open_items_count(annotator=anna) == 5
    assert assignment_next(annotator=anna, batch=batch_b).work_item.batch_id == batch_b.pk
    batch_settings_apply(batch=batch_b, settings={"open_to_all_annotators": False})
    Assignment.objects.filter(annotator=anna).delete()
    assert open_items_count(annotator=anna) == 2


def test_a_closed_batch_no_longer_keeps_its_people_from_the_others(two_batches):
    batch_a, batch_b, anna, _ = two_batches
    Batch.objects.filter(pk=batch_a.pk).update(status=Batch.Status.CLOSED)
    assert assignment_next(annotator=anna).work_item.batch_id == batch_b.pk


def test_new_batches_are_not_open_to_all_by_default(two_batches):
    _, batch_b, _, _ = two_batches
    assert not batch_b.open_to_all_annotators


def test_the_capacity_counts_the_people_who_may_be_served(two_batches):
    """The import report's and the dashboard's "can its people finish it" count the same people as the queue."""
    from annotate.queue.capacity import annotator_pool

    batch_a, batch_b, anna, bob = two_batches
    batch_a.refresh_from_db()
    assert set(annotator_pool(batch_b)) == {bob}  # anna belongs to batch A
    assert set(annotator_pool(batch_a)) == {anna}
    assert set(annotator_pool(None)) == {bob}  # a new batch naming no one
    assert set(annotator_pool(None, open_to_all=True)) == {anna, bob}
    Batch.objects.filter(pk=batch_b.pk).update(open_to_all_annotators=True)
    batch_b.refresh_from_db()
    assert set(annotator_pool(batch_b)) == {anna, bob}
