"""POST /api/next/ with a batch named: the item under way is resumed whatever the name (one at a time), the named
batch is served, and a name no batch has is a 404 that names it, with nothing reserved."""

import pytest
from django.urls import reverse

from annotate.models import Assignment, Session
from tests.annotate import helpers
from tests.factories import make_batch

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("no_dispatch")]


def ask(client, name):
    return client.post(reverse("api-next"), {"batch": name}, format="json")


def finish(session_id):
    helpers.finish(Session.objects.get(pk=session_id).assignment)


def test_an_unknown_name_is_a_404_naming_it_and_reserves_nothing(client_of, simulated_model):
    make_batch(models=[simulated_model], tasks=3)
    response = ask(client_of, "no such batch")
    assert response.status_code == 404
    assert "no such batch" in response.json()["detail"]
    assert not Assignment.objects.exists()


def test_an_unknown_name_is_a_404_with_an_item_under_way_too(client_of, simulated_model):
    batch = make_batch(models=[simulated_model], tasks=3)
    assert ask(client_of, batch.name).json()["state"] == "item"
    assert ask(client_of, "no such batch").status_code == 404
    assert Assignment.objects.count() == 1


def test_the_named_batch_is_served_and_the_item_under_way_resumed_first(client_of, simulated_model):
    first, other = make_batch(models=[simulated_model], tasks=3), make_batch(models=[simulated_model], tasks=3)
    session_id = ask(client_of, first.name).json()["session_id"]
    assert Session.objects.get(pk=session_id).batch_id == first.pk
    # Another batch named while the first's item is under way: that item, not a second one.
    assert ask(client_of, other.name).json()["session_id"] == session_id
    finish(session_id)
    moved = ask(client_of, other.name).json()["session_id"]
    assert Session.objects.get(pk=moved).batch_id == other.pk
    finish(moved)
    back = ask(client_of, first.name).json()["session_id"]
    assert Session.objects.get(pk=back).batch_id == first.pk
