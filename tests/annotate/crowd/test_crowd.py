"""Crowdsourcing entry: signed invite links, Prolific participant ids, the completion page, the command."""

import io
import time
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.core import signing
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotate.assignments import assignment_complete
from annotate.crowd import services as crowd
from annotate.models import Batch, Session, User
from annotate.queue.services import assignment_next
from tests.factories import UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]



@pytest.fixture
def batch(simulated_model):
    batch = make_batch(models=[simulated_model], tasks=2)
    crowd.batch_set_completion_code(batch=batch, code="C0MPL3TE")
    return batch


def join_url(batch, query="", **kwargs):
    url = reverse("crowd-join", args=[crowd.invite_token_create(batch=batch, **kwargs)])
    return f"{url}?{query}" if query else url


def participants():
    return User.objects.filter(crowd_batch__isnull=False)


def test_invite_shows_the_study_then_joins_on_post(client, batch):
    url = join_url(batch)
    page = client.get(url)
    assert page.status_code == 200 and batch.name in page.content.decode()
    assert not participants().exists()  # link previews create nobody
    response = client.post(url)
    assert response.status_code == 302 and response["Location"] == reverse("home")
    user = participants().get()
    assert user.role == User.Role.ANNOTATOR and not user.has_usable_password() and user.crowd_batch == batch
    assert user.external_id is None and user.username.startswith("crowd-")
    assert client.get(reverse("home")).status_code == 200
    assert int(client.session["_auth_user_id"]) == user.id
    client.post(url)  # the same browser again: the same participant
    assert participants().count() == 1


def test_tampered_and_garbage_tokens_are_refused(client, batch):
    token = crowd.invite_token_create(batch=batch)
    payload, signature = token.rsplit(":", 1)
    forged = signing.dumps({"b": batch.id + 1, "e": None}, salt="some-other-salt")
    for bad in (payload + ":" + signature[::-1], token[:-2], "garbage", forged):
        response = client.get(reverse("crowd-join", args=[bad]))
        assert response.status_code == 400 and "not valid" in response.content.decode()
        assert client.post(reverse("crowd-join", args=[bad])).status_code == 400
    assert not participants().exists()


def test_expired_token_and_closed_batch(client, batch):
    url = join_url(batch, expires_in=timedelta(days=1), now=time.time() - 2 * 86400)
    response = client.post(url)
    assert response.status_code == 410 and "expired" in response.content.decode()
    fresh = join_url(batch, expires_in=timedelta(days=1))
    assert client.get(fresh).status_code == 200
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.CLOSED)
    assert client.post(fresh).status_code == 410
    assert not participants().exists()


def test_token_does_not_carry_the_completion_code(batch):
    payload = signing.loads(crowd.invite_token_create(batch=batch), salt=crowd.SALT)
    assert "C0MPL3TE" not in str(payload)


def test_prolific_pid_is_reused_and_never_shown(client, batch, simulated_model):
    query = "PROLIFIC_PID=5f1d2c3b4a5e6f7a8b9c0d1e&STUDY_ID=study1&SESSION_ID=sess1"
    assert client.post(join_url(batch, query)).status_code == 302
    user = User.objects.get(external_id="5f1d2c3b4a5e6f7a8b9c0d1e")
    home = client.get(reverse("home")).content.decode()
    assert "5f1d2c3b4a5e6f7a8b9c0d1e" not in home
    # Another device, the same study: the same account.
    second_browser = client.__class__()
    assert second_browser.post(join_url(batch, query)).status_code == 302
    assert participants().count() == 1 and int(second_browser.session["_auth_user_id"]) == user.id
    # A second study: an account of its own (tests/annotate/crowd/test_pid_takeover.py); the first stays put.
    other = make_batch(models=[simulated_model], tasks=1)
    third_browser = client.__class__()
    assert third_browser.post(join_url(other, query)).status_code == 302
    assert participants().count() == 2 and int(third_browser.session["_auth_user_id"]) != user.id
    user.refresh_from_db()
    assert user.crowd_batch == batch


@pytest.mark.parametrize("pid", ["", "has space", "x" * 65, "<script>"])
def test_bad_prolific_pid_is_400(client, batch, pid):
    response = client.post(join_url(batch, f"PROLIFIC_PID={pid}"))
    assert response.status_code == 400 and "PROLIFIC_PID" in response.content.decode()
    assert not participants().exists()


def test_a_pid_never_enters_an_account_with_a_password(client, batch, researcher, annotator):
    researcher.external_id, annotator.external_id = "staff1", "regular1"
    researcher.save()
    annotator.save()
    for pid in ("staff1", "regular1"):
        response = client.post(join_url(batch, f"PROLIFIC_PID={pid}"))
        assert response.status_code == 400 and "_auth_user_id" not in client.session


def test_signed_in_staff_see_a_warning_and_get_a_new_participant(client, batch, researcher):
    client.force_login(researcher)
    page = client.get(join_url(batch))
    assert "signs you out" in page.content.decode()
    client.post(join_url(batch))
    assert int(client.session["_auth_user_id"]) == participants().get().id != researcher.id


def test_participants_are_served_only_their_batch(client, batch, simulated_model):
    other = make_batch(models=[simulated_model], tasks=3)
    client.post(join_url(batch))
    user = participants().get()
    served = []
    while (assignment := assignment_next(annotator=user)) is not None:
        served.append(assignment.work_item.batch_id)
        Session.objects.filter(assignment=assignment).update(status=Session.Status.COMPLETED)
        assignment_complete(assignment_id=assignment.id)
    assert served == [batch.id, batch.id]
    assert assignment_next(annotator=user, batch=other) is None  # not even when asking for it by name
    assert assignment_next(annotator=UserFactory()).work_item.batch_id in (batch.id, other.id)


def test_completion_code_only_when_no_items_remain(client, batch):
    client.post(join_url(batch, "PROLIFIC_PID=abc123"))
    user = participants().get()
    page = client.get(reverse("crowd-done")).content.decode()
    assert "C0MPL3TE" not in page and "2 items left" in page
    assignment = assignment_next(annotator=user)
    page = client.get(reverse("crowd-done")).content.decode()
    assert "C0MPL3TE" not in page and "in progress" in page
    for _ in range(2):
        Session.objects.filter(assignment=assignment).update(status=Session.Status.COMPLETED)
        assignment_complete(assignment_id=assignment.id)
        assignment = assignment_next(annotator=user)
    assert assignment is None
    page = client.get(reverse("crowd-done")).content.decode()
    assert "C0MPL3TE" in page and "app.prolific.com/submissions/complete?cc=C0MPL3TE" in page


def test_done_page_for_others(client, annotator):
    assert client.get(reverse("crowd-done")).status_code == 302  # log in first
    client.force_login(annotator)
    assert client.get(reverse("crowd-done")).status_code == 404


def test_invite_link_command(client, batch):
    out = io.StringIO()
    call_command("invite_link", "--batch", batch.name, "--expires-days", "3", "--completion-code", "NEW-CODE",
                 "--base-url", "https://lab.example.org/", stdout=out)
    lines = out.getvalue().splitlines()
    url = urlsplit(lines[0])
    assert url.scheme == "https" and url.netloc == "lab.example.org" and url.path.startswith("/join/")
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in lines[1]
    batch.refresh_from_db()
    assert batch.completion_code == "NEW-CODE"
    invite = crowd.invite_read(url.path.split("/")[2])
    assert invite.batch == batch and invite.expires_at is not None
    assert client.get(url.path).status_code == 200
    with pytest.raises(CommandError, match="No batch"):
        call_command("invite_link", "--batch", "nope", stdout=io.StringIO())
    with pytest.raises(CommandError, match="completion code"):
        call_command("invite_link", "--batch", batch.name, "--completion-code", "bad code!", stdout=io.StringIO())


@pytest.mark.parametrize("by_name", [False, True])
def test_participants_stop_at_the_items_per_participant_limit(client, simulated_model, by_name):
    batch = make_batch(models=[simulated_model], tasks=5)
    crowd.batch_set_completion_code(batch=batch, code="DONE-2")
    call_command("invite_link", "--batch", batch.name, "--items-per-participant", "2", stdout=io.StringIO())
    batch.refresh_from_db()
    client.post(join_url(batch, "PROLIFIC_PID=limit1"))
    user = participants().get()
    served = 0
    while (assignment := assignment_next(annotator=user, batch=batch if by_name else None)) is not None:
        served += 1
        if served == 1:  # a skip does not use up the allowance
            from annotate.assignments import assignment_skip

            assignment_skip(assignment=assignment, reason="image does not load")
            continue
        Session.objects.filter(assignment=assignment).update(status=Session.Status.COMPLETED)
        assignment_complete(assignment_id=assignment.id)
    assert served == 3  # one skipped + two done
    page = client.get(reverse("crowd-done")).content.decode()
    assert "DONE-2" in page
    assert assignment_next(annotator=UserFactory(), batch=batch) is not None  # staff annotators have no limit


def test_invite_link_command_rejects_a_negative_limit(batch):
    with pytest.raises(CommandError, match="Items per participant"):
        call_command("invite_link", "--batch", batch.name, "--items-per-participant", "-1", stdout=io.StringIO())


@pytest.mark.parametrize("tasks, limit, expected_before, expected_after_one", [
    (5, 2, "2 items left", "1 item left"),  # the participant's share, not the batch's 5 open items
    (2, 3, "2 items left", "1 item left"),  # a share larger than what is open: capped by the open items
    (3, None, "3 items left", "2 items left"),  # no share: everything open to them
])
def test_done_page_counts_the_participants_own_share(client, simulated_model, tasks, limit, expected_before,
                                                     expected_after_one):
    batch = make_batch(models=[simulated_model], tasks=tasks)
    Batch.objects.filter(pk=batch.pk).update(items_per_participant=limit)
    client.post(join_url(batch))
    user = participants().get()
    assert expected_before in client.get(reverse("crowd-done")).content.decode()
    assignment = assignment_next(annotator=user)
    page = client.get(reverse("crowd-done")).content.decode()
    assert f"in progress and {expected_after_one.split()[0]} more to do" in page
    Session.objects.filter(assignment=assignment).update(status=Session.Status.COMPLETED)
    assignment_complete(assignment_id=assignment.id)
    assert expected_after_one in client.get(reverse("crowd-done")).content.decode()
