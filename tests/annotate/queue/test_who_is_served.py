"""Who the queue serves, and how much (issue 28 items 5 and 6): annotators and invited participants only, only from
batches they may work on, one item at a time, and a participant's share holds under any race."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotate.crowd import services as crowd
from annotate.models import Assignment, Batch, Round, Session, User
from tests.annotate.helpers import all_at_once, finish
from tests.factories import ModelConfigFactory, UserFactory, make_batch


@pytest.mark.django_db
@pytest.mark.usefixtures("no_dispatch")
@pytest.mark.parametrize("role", [User.Role.RESEARCHER, User.Role.ADMIN])
def test_researchers_and_admins_are_never_served(api_client, client, role):
    theirs = make_batch(models=[ModelConfigFactory()], tasks=2)
    others = make_batch(models=[ModelConfigFactory()], tasks=2)
    person = UserFactory(role=role)
    theirs.members.add(person)
    api_client.force_authenticate(person)
    for body in ({}, {"batch": theirs.name}, {"batch": others.name}):
        response = api_client.post(reverse("api-next"), body, format="json")
        assert response.status_code == 403 and "Only annotators" in response.json()["detail"], response.content
    client.force_login(person)
    client.post(reverse("next-item"))
    page = client.get(reverse("home") + "?annotate=1").content.decode()
    assert "not served items" in page and 'id="next-button"' not in page
    assert not Assignment.objects.exists() and not Session.objects.exists()


@pytest.mark.django_db
@pytest.mark.usefixtures("no_dispatch")
def test_annotators_are_served_only_batches_they_may_work_on(api_client):
    named = make_batch(models=[ModelConfigFactory()], tasks=2)
    someone = UserFactory()
    named.annotators.set([someone])
    Batch.objects.filter(pk=named.pk).update(annotators_named=True)
    joined = make_batch(models=[ModelConfigFactory()], tasks=2)
    participant = UserFactory(crowd_batch=joined)
    outsider = UserFactory()
    for person, batch in ((outsider, named), (participant, named)):
        api_client.force_authenticate(person)
        assert api_client.post(reverse("api-next"), {"batch": batch.name}, format="json").json() == {
            "state": "done", **({"url": "/done/"} if person.crowd_batch_id else {})}
    api_client.force_authenticate(outsider)
    body = api_client.post(reverse("api-next"), {}, format="json").json()  # any batch: not the named one
    assert Session.objects.get(pk=body["session_id"]).batch_id == joined.id
    assert not Assignment.objects.filter(work_item__batch=named).exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("no_dispatch")
@pytest.mark.parametrize("models", [1, 2])
def test_parallel_requests_of_one_participant_give_one_item_and_the_share_holds(models):
    """10 POST /api/next/ at once from one participant whose share is 2, three times over: one item each time (the
    same for all ten), never two under way, 2 items in all, one session and one round 0 per item, and (several
    models) their arrival counted once."""
    batch = make_batch(models=[ModelConfigFactory() for _ in range(models)], tasks=6, overlap=2)
    Batch.objects.filter(pk=batch.pk).update(items_per_participant=2)
    participant = crowd.participant_for_invite(invite=crowd.invite_read(crowd.invite_token_create(batch=batch)))

    def ask(_):
        client = APIClient()
        client.force_authenticate(participant)
        response = client.post(reverse("api-next"), {"batch": batch.name}, format="json")
        return response.status_code, response.json().get("state"), response.json().get("session_id")

    for round_ in range(3):
        answers = all_at_once(ask, list(range(10)))
        errors = [a for a in answers if isinstance(a, BaseException)]
        assert errors == []
        if round_ < 2:
            assert {status for status, _, _ in answers} == {200}
            assert len({session for _, _, session in answers}) == 1, answers  # all ten resumed one item
            assert Assignment.objects.filter(annotator=participant, status="active").count() == 1
            assert Batch.objects.get(pk=batch.pk).annotators_started == (1 if models > 1 else 0)
            finish(Assignment.objects.get(annotator=participant, status="active"))
        else:
            assert {state for _, state, _ in answers} == {"done"}
    assert Assignment.objects.filter(annotator=participant).count() == 2
    assert Assignment.objects.filter(annotator=participant, status="completed").count() == 2
    assert Session.objects.filter(annotator=participant).count() == 2
    assert Round.objects.filter(session__annotator=participant, index=0).count() == 2
    assert User.objects.get(pk=participant.pk).serving_version == 2  # one bump per item reserved
