"""Invite links as rows: created from the page, the API or the command (one service), listed with how many
people joined through each, how many items they finished and how many finished their share; revoked and expired
links refuse to join with a clear message."""

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from annotate.crowd import selectors, services
from annotate.models import InviteLink, User
from annotate.queue.services import assignment_next
from tests.annotate.helpers import finish
from tests.factories import UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


@pytest.fixture
def batch(simulated_model, researcher):
    batch = make_batch(models=[simulated_model], tasks=3, members=[researcher])
    return batch


def join_through(client, path: str, query: str = "") -> User:
    response = client.post(f"{path}?{query}" if query else path)
    assert response.status_code == 302, response.content.decode()[:500]
    return User.objects.get(pk=client.session["_auth_user_id"])


def do_items(user: User, n: int) -> None:
    for _ in range(n):
        finish(assignment_next(annotator=user))


def test_the_page_creates_a_link_and_counts_who_used_it(client, batch, researcher):
    client.force_login(researcher)
    page = reverse("research-invites", args=[batch.id])
    response = client.post(page, {"label": "pilot", "expires_days": "7", "items_per_participant": "2",
                                  "completion_code": "DONE-1"})
    assert response.status_code == 302
    link = InviteLink.objects.get(batch=batch)
    assert link.label == "pilot" and link.created_by == researcher and link.expires_at is not None
    batch.refresh_from_db()
    assert (batch.items_per_participant, batch.completion_code) == (2, "DONE-1")

    path, _ = selectors.invite_link_paths(link)
    from django.test import Client

    first, second = Client(), Client()
    do_items(join_through(first, path), 2)  # finished their share
    do_items(join_through(second, path, "PROLIFIC_PID=pid-7&STUDY_ID=s&SESSION_ID=x"), 1)

    html = client.get(page).content.decode()
    assert f'id="link-{link.id}"' in html and "pilot" in html
    [row] = selectors.invite_links_usage(batch=batch)
    assert (row.joined, row.items_done, row.finished_share, row.state) == (2, 3, 1, "active")
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in row.prolific_path


def test_bad_input_on_the_page_is_named_and_nothing_is_created(client, batch, researcher):
    client.force_login(researcher)
    response = client.post(reverse("research-invites", args=[batch.id]),
                           {"expires_days": "soon", "items_per_participant": "2"})
    assert response.status_code == 400 and "Expiry (days) must be a number" in response.content.decode()
    response = client.post(reverse("research-invites", args=[batch.id]), {"completion_code": "bad code!"})
    assert response.status_code == 400 and "completion code" in response.content.decode()
    assert not InviteLink.objects.exists()
    batch.refresh_from_db()
    assert batch.items_per_participant is None and batch.completion_code == ""


def test_a_revoked_link_refuses_to_join_and_keeps_the_work(client, batch, researcher):
    link, token = services.invite_link_create(batch=batch, label="wave 1")
    path = reverse("crowd-join", args=[token])
    from django.test import Client

    participant = join_through(Client(), path)
    do_items(participant, 1)
    client.force_login(researcher)
    assert client.post(reverse("research-invite-revoke", args=[batch.id, link.id])).status_code == 302
    refused = Client().post(path)
    assert refused.status_code == 410 and "withdrawn" in refused.content.decode()
    [row] = selectors.invite_links_usage(batch=batch)
    assert (row.state, row.joined, row.items_done) == ("revoked", 1, 1)


def test_an_expired_link_refuses_to_join(batch):
    link, token = services.invite_link_create(batch=batch, expires_in_days=1)
    InviteLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    path, _ = selectors.invite_link_paths(InviteLink.objects.get(pk=link.pk))
    from django.test import Client

    response = Client().post(path)
    assert response.status_code == 410 and "expired" in response.content.decode()


def test_only_the_batch_researchers_see_its_links(client, batch):
    services.invite_link_create(batch=batch)
    client.force_login(UserFactory(role=User.Role.RESEARCHER))  # not a member
    assert client.get(reverse("research-invites", args=[batch.id])).status_code == 404
    client.force_login(UserFactory(role=User.Role.ANNOTATOR))
    assert client.get(reverse("research-invites", args=[batch.id])).status_code == 403


def test_the_api_creates_lists_and_revokes(api_client, batch, researcher):
    api_client.force_authenticate(researcher)
    url = reverse("api-invite-links", args=[batch.id])
    created = api_client.post(url, {"label": "api", "items_per_participant": 1, "completion_code": "API-1"},
                              format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["state"] == "active" and body["joined"] == 0 and body["url"].startswith("/join/")
    assert api_client.post(url, {"expires_days": -1}, format="json").status_code == 400
    listed = api_client.get(url).json()
    assert [row["id"] for row in listed] == [body["id"]]
    revoked = api_client.post(reverse("api-invite-link-revoke", args=[batch.id, body["id"]]))
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    assert api_client.post(reverse("api-invite-link-revoke", args=[batch.id, 999999])).status_code == 404
    api_client.force_authenticate(UserFactory(role=User.Role.ANNOTATOR))
    assert api_client.get(url).status_code == 403


def test_the_command_creates_lists_and_revokes(batch):
    out = io.StringIO()
    call_command("invite_link", "--batch", batch.name, "--label", "cli", "--items-per-participant", "2", stdout=out)
    assert "/join/" in out.getvalue() and "Prolific study URL" in out.getvalue()
    link = InviteLink.objects.get(batch=batch, label="cli")
    out = io.StringIO()
    call_command("invite_link", "--batch", batch.name, "--list", stdout=out)
    assert f"{link.pk}\tactive\tcli\tjoined 0\titems done 0\tfinished share 0" in out.getvalue()
    call_command("invite_link", "--batch", batch.name, "--revoke", str(link.pk), stdout=io.StringIO())
    assert InviteLink.objects.get(pk=link.pk).revoked_at is not None
    with pytest.raises(CommandError, match="No invite link"):
        call_command("invite_link", "--batch", batch.name, "--revoke", "999999", stdout=io.StringIO())
