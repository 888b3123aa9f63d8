"""Every participant URL and API, in every state a participation can be in, with GET and POST: a page or a clear
4xx, never a server error. An ended participant (or a finished one) is sent to their end page, never to an item.

Each state is built once per test through the real pages and services; each request then runs in a savepoint that
is rolled back, so one request's effect (a consent given, a questionnaire answered) does not change the next's."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotate.crowd import services as crowd
from annotate.crowd.ending import participation_end, participations_time_out
from annotate.crowd.study import study_update
from annotate.models import Batch, Participation, Session, User
from annotate.queue.services import assignment_next
from tests.annotate.crowd.study_data import POST_ANSWERS, PRE_ANSWERS, join, study_batch
from tests.annotate.helpers import finish

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]

NO_SESSION = 999_999  # a session that does not exist: the session URLs of a participant who never held one


@dataclass
class State:
    user: User | None
    session_id: int  # the session of the item they held or hold, else NO_SESSION
    stage: str  # the study's stage (annotate.crowd.flow), or "anonymous"


def _consent(client, batch) -> State:
    return State(join(client, batch), NO_SESSION, "consent")


def _screening(client, batch) -> State:
    state = _consent(client, batch)
    client.post(reverse("crowd-consent"), {"answer": "agree"})
    return State(state.user, NO_SESSION, "screening")


def _pre_survey(client, batch) -> State:
    state = _screening(client, batch)
    client.post(reverse("crowd-screening"), {"question": "leak", "answer": "No"})
    client.post(reverse("crowd-screening"), {"question": "rounds", "answer": "3"})
    return State(state.user, NO_SESSION, "pre_survey")


def _items(client, batch) -> State:
    """Working on an item: the one under way is held."""
    state = _pre_survey(client, batch)
    client.post(reverse("crowd-survey", args=["pre"]), PRE_ANSWERS)
    assignment = assignment_next(annotator=state.user)
    assert assignment is not None
    return State(state.user, assignment.session.pk, "items")


def _post_survey(client, batch) -> State:
    state = _items(client, batch)
    finish(state.user.assignments.get())
    return State(state.user, state.session_id, "post_survey")


def _finished(client, batch) -> State:
    state = _post_survey(client, batch)
    assert client.post(reverse("crowd-survey", args=["post"]), POST_ANSWERS).status_code == 302
    return State(state.user, state.session_id, "finished")


def _declined(client, batch) -> State:
    state = _consent(client, batch)
    client.post(reverse("crowd-consent"), {"answer": "decline"})
    return State(state.user, NO_SESSION, "ended")


def _screened_out(client, batch) -> State:
    state = _screening(client, batch)
    client.post(reverse("crowd-screening"), {"question": "leak", "answer": "Yes"})
    client.post(reverse("crowd-screening"), {"question": "leak", "answer": "Yes"})
    return State(state.user, NO_SESSION, "ended")


def _returned(client, batch) -> State:
    state = _items(client, batch)
    client.post(reverse("crowd-leave"))
    return State(state.user, state.session_id, "ended")


def _timed_out(client, batch) -> State:
    state = _items(client, batch)
    study_update(batch=batch, settings={"time_limit_minutes": 30})
    Participation.objects.filter(user=state.user).update(started_at=timezone.now() - timedelta(minutes=31))
    assert participations_time_out() == 1
    return State(state.user, state.session_id, "ended")


def _attention(client, batch) -> State:
    state = _items(client, batch)
    participation_end(Participation.objects.get(user=state.user), Participation.End.ATTENTION)
    return State(state.user, state.session_id, "ended")


def _anonymous(client, batch) -> State:
    return State(None, NO_SESSION, "anonymous")


BUILDERS: dict[str, Callable[[Client, Batch], State]] = {
    "anonymous": _anonymous, "at consent": _consent, "at screening": _screening, "at pre-survey": _pre_survey,
    "item under way": _items, "at post-survey": _post_survey, "finished": _finished, "declined consent": _declined,
    "screened out": _screened_out, "returned": _returned, "timed out": _timed_out, "ended by attention checks": _attention,
}
ENDS = {"declined consent": "no_consent", "screened out": "screened_out", "returned": "returned",
        "timed out": "timed_out", "ended by attention checks": "attention"}


def _requests(token: str, session_id: int) -> list[tuple[str, str, dict | None, bool]]:
    """(method, URL, body, JSON?) for every participant URL: the pages with an empty form and a meaningful one, the
    APIs with an empty body and a valid one."""
    pages = [
        ("home", []), ("crowd-study", []), ("crowd-consent", []), ("crowd-screening", []), ("crowd-leave", []),
        ("crowd-done", []), ("next-item", []), ("session-page", [session_id]), ("crowd-join", [token]),
        ("crowd-join", ["not-a-token"]), ("crowd-survey", ["pre"]), ("crowd-survey", ["post"]),
        ("crowd-survey", ["later"]),
    ]
    forms = {"crowd-consent": [{"answer": "agree"}, {"answer": "decline"}],
             "crowd-screening": [{"question": "leak", "answer": "No"}, {"question": "leak", "answer": "Maybe"}],
             "crowd-survey": [PRE_ANSWERS, POST_ANSWERS]}
    out: list[tuple[str, str, dict | None, bool]] = []
    for name, args in pages:
        url = reverse(name, args=args)
        out += [("get", url, None, False), ("post", url, {}, False)]
        out += [("post", url, form, False) for form in forms.get(name, [])]
    out.append(("get", reverse("crowd-screening") + "?answered=leak", None, False))
    apis = {
        "api-study": [], "api-study-consent": [{"accept": True}, {"accept": "maybe"}],
        "api-study-screening": [{"question": "leak", "answer": "No"}],
        "api-study-return": [], "api-next": [],
        "api-session": [], "api-session-feedback": [{"feedback": "Look again at the image.", "client_request_id": "r1"}],
        "api-session-draft": [{"draft": "Look"}], "api-session-retry": [], "api-session-verdict": [{"correct": True}],
        "api-session-heartbeat": [], "api-session-skip": [{"reason": "image does not load"}],
    }
    for name, bodies in apis.items():
        url = reverse(name, args=[session_id] if name.startswith("api-session") else [])
        out += [("get", url, None, True), ("post", url, {}, True)]
        out += [("post", url, body, True) for body in bodies]
    for phase, answers in (("pre", PRE_ANSWERS), ("post", POST_ANSWERS), ("later", {})):
        url = reverse("api-study-survey", args=[phase])
        out += [("get", url, None, True), ("post", url, {}, True), ("post", url, {"answers": answers}, True)]
    return out


def _send(client: Client, method: str, url: str, body: dict | None, as_json: bool):
    """The request in a savepoint rolled back afterwards; a server error comes back as its traceback."""
    try:
        with transaction.atomic():
            if method == "get":
                response = client.get(url)
            elif as_json:
                response = client.post(url, body, content_type="application/json")
            else:
                response = client.post(url, body)
            transaction.set_rollback(True)
    except Exception:  # noqa: BLE001 - the test client re-raises a view's exception: that is the 500 we look for
        return None, traceback.format_exc(limit=-3)
    return response, ""


@pytest.mark.parametrize("name", list(BUILDERS))
def test_no_participant_url_answers_a_server_error(client, simulated_model, name):
    batch = study_batch(simulated_model)
    state = BUILDERS[name](client, batch)
    _, token = crowd.invite_link_create(batch=batch, label="matrix")
    failures = []
    for method, url, body, as_json in _requests(token, state.session_id):
        response, error = _send(client, method, url, body, as_json)
        if response is None or response.status_code >= 500:
            failures.append(f"{method.upper()} {url} {body}: {error or response.status_code}")
    assert not failures, "\n".join(failures)
    csrf_client = Client(enforce_csrf_checks=True)
    if state.user is not None:
        csrf_client.force_login(state.user)
    for url in (reverse("crowd-consent"), reverse("crowd-leave"), reverse("next-item")):
        response = csrf_client.post(url, {"answer": "agree"})  # no CSRF token: refused, not a server error
        assert response.status_code == 403


@pytest.mark.parametrize("name", list(ENDS))
def test_an_ended_participant_is_sent_to_their_end_page_never_to_an_item(client, simulated_model, name):
    batch = study_batch(simulated_model)
    state = BUILDERS[name](client, batch)
    assert Participation.objects.get(user=state.user).end_reason == ENDS[name]
    study = reverse("crowd-study")
    for url in (reverse("home"), reverse("crowd-consent"), reverse("crowd-screening"), reverse("crowd-leave"),
                reverse("crowd-done"), reverse("crowd-survey", args=["pre"]), reverse("crowd-survey", args=["post"])):
        assert client.get(url)["Location"] == study, url
        assert client.post(url, {})["Location"] == study, url
    page = client.get(study)
    assert page.status_code == 200 and "ALL-DONE" not in page.content.decode()
    assert client.post(reverse("next-item"))["Location"] in (reverse("crowd-done"), study)
    assert client.post(reverse("api-next"), {}, content_type="application/json").json() == {
        "state": "study", "url": study}
    assert client.get(reverse("api-study")).json()["end_reason"] == ENDS[name]
    assert client.post(reverse("api-study-return")).status_code == 409
    if state.session_id != NO_SESSION:  # the item they held is no longer theirs to work on
        assert Session.objects.get(pk=state.session_id).status == Session.Status.ABANDONED
        feedback = client.post(reverse("api-session-feedback", args=[state.session_id]),
                               {"feedback": "More.", "client_request_id": "late"}, content_type="application/json")
        assert 400 <= feedback.status_code < 500


def test_a_finished_participant_keeps_their_code_on_every_page_of_the_study(client, simulated_model):
    batch = study_batch(simulated_model)
    _finished(client, batch)
    for url in (reverse("crowd-consent"), reverse("crowd-screening"), reverse("crowd-survey", args=["post"])):
        assert client.get(url)["Location"] == reverse("crowd-done"), url
    assert "ALL-DONE" in client.get(reverse("crowd-done")).content.decode()
    assert client.post(reverse("api-study-consent"), {"accept": True}, content_type="application/json"
                       ).status_code == 409


def test_a_participant_who_has_not_started_an_item_gets_pages_not_errors(client, simulated_model):
    batch = study_batch(simulated_model, study=False)  # a study that asks nothing besides the items
    user = join(client, batch)
    _, token = crowd.invite_link_create(batch=batch, label="matrix")
    for method, url, body, as_json in _requests(token, NO_SESSION):
        response, error = _send(client, method, url, body, as_json)
        assert response is not None and response.status_code < 500, f"{method} {url}: {error}"
    assert client.get(reverse("crowd-study"))["Location"] == reverse("home")
    assert client.post(reverse("next-item"))["Location"].startswith("/annotate/sessions/")
    assert user.assignments.count() == 1
