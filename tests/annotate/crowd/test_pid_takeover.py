"""A participant id (Prolific's PROLIFIC_PID, typed into a URL by anyone) opens only an account made through the
same study: never one made through another batch's link, never one with a password or a staff role, and it never
moves a participant from the batch they joined. The same person on another batch's link gets an account of that
batch; the same PID on another device with a link of the same batch comes back to their account."""

import pytest
from django.test import Client
from django.urls import reverse

from annotate.crowd import services as crowd
from annotate.models import User
from annotate.queue.services import assignment_next
from tests.factories import UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]

PID = "5f1d2c3b4a5e6f7a8b9c0d1e"


@pytest.fixture
def study_a(simulated_model):
    return make_batch(models=[simulated_model], tasks=2)


@pytest.fixture
def study_b(simulated_model):
    return make_batch(models=[simulated_model], tasks=2)


def link_of(batch, label="") -> str:
    link, token = crowd.invite_link_create(batch=batch, label=label)
    return reverse("crowd-join", args=[token])


def join(client: Client, path: str, query: str = "") -> User:
    response = client.post(f"{path}?{query}" if query else path)
    assert response.status_code == 302, response.content.decode()[:500]
    return User.objects.get(pk=client.session["_auth_user_id"])


def victim_with_a_draft(study_a) -> tuple[User, int]:
    """A participant of study A, through its link with their PID, with a session under way and a draft in it."""
    browser = Client()
    victim = join(browser, link_of(study_a), f"PROLIFIC_PID={PID}")
    session = assignment_next(annotator=victim).session
    assert browser.post(reverse("api-session-draft", args=[session.id]), {"draft": "my private draft"},
                        content_type="application/json").status_code == 204
    return victim, session.id


def test_the_same_pid_on_another_batchs_link_opens_a_new_account_of_that_batch(study_a, study_b):
    victim, session_id = victim_with_a_draft(study_a)
    attacker = Client()
    joined = join(attacker, link_of(study_b), f"PROLIFIC_PID={PID}")
    assert joined.pk != victim.pk and joined.crowd_batch == study_b and joined.external_id == PID
    # The victim's draft is not theirs to read, and the victim stays where they were.
    response = attacker.get(reverse("api-session", args=[session_id]))
    assert response.status_code == 404 and "my private draft" not in response.content.decode()
    victim.refresh_from_db()
    assert victim.crowd_batch == study_a and victim.invite_link.batch == study_a
    assert User.objects.filter(external_id=PID).count() == 2


def test_the_same_pid_on_another_link_of_the_same_batch_comes_back_to_its_account(study_a):
    victim, session_id = victim_with_a_draft(study_a)
    other_device = Client()
    back = join(other_device, link_of(study_a, label="second wave"), f"PROLIFIC_PID={PID}")
    assert back.pk == victim.pk
    assert other_device.get(reverse("api-session", args=[session_id])).json()["feedback_draft"] == "my private draft"


def test_a_participant_signed_in_here_is_never_moved_by_another_batchs_link(study_a, study_b):
    browser = Client()
    first = join(browser, link_of(study_a))
    second = join(browser, link_of(study_b))
    assert second.pk != first.pk and second.crowd_batch == study_b
    first.refresh_from_db()
    assert first.crowd_batch == study_a
    assert join(browser, link_of(study_b)).pk == second.pk  # the same batch again: the same participant


@pytest.mark.parametrize("kind", ["password", "staff", "superuser", "researcher", "made by an admin"])
def test_a_pid_never_enters_an_account_that_can_log_in_otherwise(study_a, kind):
    """Only accounts made through an invite link are entered by a PID; any other is refused, whatever its batch."""
    user = UserFactory(username=f"someone-{kind.replace(' ', '-')}", external_id=PID, crowd_batch=study_a)
    if kind == "password":
        user.set_password("a real password")
    else:
        user.set_unusable_password()
    if kind == "staff":
        user.is_staff = True
    elif kind == "superuser":
        user.is_superuser = True
    elif kind == "researcher":
        user.role = User.Role.RESEARCHER
    elif kind == "made by an admin":
        user.crowd_batch = None  # a `users add` annotator who has not chosen a password yet
    user.save()
    browser = Client()
    response = browser.post(f"{link_of(study_a)}?PROLIFIC_PID={PID}")
    assert response.status_code == 400 and "_auth_user_id" not in browser.session
    user.refresh_from_db()
    assert user.crowd_batch_id == (None if kind == "made by an admin" else study_a.id)
