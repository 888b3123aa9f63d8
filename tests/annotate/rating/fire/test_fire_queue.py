"""FIRE conversations go through the one next-item queue: overlap K met exactly, nobody rates one twice."""

from collections import Counter
from datetime import timedelta
from unittest import mock

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate.assignments import assignment_complete, assignments_expire
from annotate.models import Assignment, Session, WorkItem
from annotate.queue.services import assignment_next
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


def test_three_raters_per_conversation_exactly_and_never_twice(fire_batch):
    annotators = [UserFactory() for _ in range(5)]
    served = []
    for _ in range(6):  # rounds of everyone asking, more than enough
        for annotator in annotators:
            assignment = assignment_next(annotator=annotator)
            if assignment is not None:
                served.append((assignment.work_item.conversation_id, annotator.id))
                assignment_complete(assignment_id=assignment.id)
    per_conversation = Counter(conversation for conversation, _ in served)
    assert sorted(per_conversation.values()) == [3, 3]
    assert len(set(served)) == len(served)  # no (conversation, rater) twice
    assert sorted(WorkItem.objects.filter(batch=fire_batch).values_list("completed_count", flat=True)) == [3, 3]
    assert WorkItem.objects.filter(batch=fire_batch, active_count__gt=0).count() == 0
    assert Session.objects.count() == 0  # a conversation to rate needs no model session
    assert assignment_next(annotator=UserFactory()) is None


def test_active_reservations_count_toward_k(fire_batch):
    fire_batch.overlap = 2
    fire_batch.save()
    first = [assignment_next(annotator=UserFactory()) for _ in range(4)]
    assert all(a is not None for a in first)
    assert Counter(a.work_item_id for a in first) == Counter({first[0].work_item_id: 2, first[2].work_item_id: 2})
    assert assignment_next(annotator=UserFactory()) is None  # all reserved, none completed yet


def test_one_annotator_rates_conversations_back_to_back_and_resumes(fire_batch):
    annotator = UserFactory()
    first = assignment_next(annotator=annotator)
    assert assignment_next(annotator=annotator).pk == first.pk  # resume, not a second reservation
    assignment_complete(assignment_id=first.id)
    second = assignment_next(annotator=annotator)
    assert second is not None and second.work_item.conversation_id != first.work_item.conversation_id


def test_expired_lease_returns_the_conversation_to_the_pool(fire_batch):
    fire_batch.overlap = 1
    fire_batch.save()
    slow = UserFactory()
    taken = [assignment_next(annotator=UserFactory()) for _ in range(2)]
    Assignment.objects.filter(pk=taken[0].pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert assignments_expire() == 1
    again = assignment_next(annotator=slow)
    assert again.work_item_id == taken[0].work_item_id


@mock.patch("annotate.sessions.services.round_generation_queue")
def test_fire_and_interfeedback_batches_share_the_queue(_dispatch, fire_batch):
    interfeedback = make_batch(models=[ModelConfigFactory()], tasks=1)
    annotator = UserFactory()
    kinds = []
    while (assignment := assignment_next(annotator=annotator)) is not None:
        kinds.append("fire" if assignment.work_item.conversation_id else "session")
        if assignment.work_item.task_id:
            Session.objects.filter(assignment=assignment).update(status=Session.Status.COMPLETED)
        assignment_complete(assignment_id=assignment.id)
    assert sorted(kinds) == ["fire", "fire", "session"]
    fire_only = assignment_next(annotator=UserFactory(), batch=fire_batch)
    assert fire_only.work_item.batch_id == fire_batch.id
    assert interfeedback.work_items.count() == 1


def test_start_next_item_leads_to_the_rating_page(client, fire_batch, annotator):
    client.force_login(annotator)
    response = client.post(reverse("next-item"))
    assignment = Assignment.objects.get(annotator=annotator)
    conversation_id = assignment.work_item.conversation_id
    assert response.status_code == 302
    assert response.url == reverse("fire-rate", args=[conversation_id])
    home = client.get(reverse("home"))
    assert reverse("fire-rate", args=[conversation_id]) in home.content.decode()  # the Resume link


def test_next_item_api_names_the_conversation(api_client, fire_batch, annotator):
    api_client.force_authenticate(annotator)
    response = api_client.post(reverse("api-next"), {"batch": fire_batch.name}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["session_id"] is None
    assert body["url"] == reverse("fire-rate", args=[body["conversation_id"]])
