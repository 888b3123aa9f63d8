"""Session API: the happy path, other people's sessions (404), bad input (400), query counts."""

import pytest
from django.urls import reverse

from annotate.models import Session
from annotate.queue.services import assignment_next
from tests.annotate.helpers import run_pending_round
from tests.factories import make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(annotator, simulated_model, researcher):
    batch = make_batch(models=[simulated_model], members=[researcher])
    session = assignment_next(annotator=annotator, batch=batch).session
    run_pending_round(session)
    return session


def url(name, session):
    return reverse(name, args=[session.id])


def test_annotator_reads_own_session_without_ground_truth(api_client, annotator, session, django_assert_max_num_queries):
    api_client.force_authenticate(annotator)
    with django_assert_max_num_queries(6):
        response = api_client.get(url("api-session", session))
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "awaiting_feedback" and body["next_round"] == 1
    assert "ground_truth" not in body and "7391" not in response.content.decode()


def test_feedback_round_trip_and_idempotency(api_client, annotator, session):
    api_client.force_authenticate(annotator)
    payload = {"feedback": "Count the rows again.", "client_request_id": "req-1", "typing_ms": 1200}
    first = api_client.post(url("api-session-feedback", session), payload, format="json")
    again = api_client.post(url("api-session-feedback", session), payload, format="json")
    assert first.status_code == 201 and again.status_code == 201
    assert session.rounds.count() == 2
    assert session.rounds.get(index=1).typing_ms == 1200
    assert first.json()["status"] == "generating"
    # The response's snapshot is built from the rounds the submit holds: the same as a fresh read.
    fresh = api_client.get(url("api-session", session)).json()
    assert first.json() == again.json() == fresh
    assert [r["index"] for r in fresh["rounds"]] == [0, 1]
    assert fresh["rounds"][1]["feedback_text"] == payload["feedback"]


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"feedback": "x"}, "client_request_id"),
        ({"client_request_id": "r"}, "feedback"),
        ({"feedback": "x" * 5000, "client_request_id": "r"}, "feedback"),
        ({"feedback": "x", "client_request_id": "r", "typing_ms": -5}, "typing_ms"),
    ],
)
def test_bad_feedback_input_is_400_naming_the_field(api_client, annotator, session, payload, message):
    api_client.force_authenticate(annotator)
    response = api_client.post(url("api-session-feedback", session), payload, format="json")
    assert response.status_code == 400 and message in response.json()


def test_leak_warning_is_a_200_warning_and_sends_nothing(api_client, annotator, session):
    """A warning is not an error (no red console line in the browser), and nothing goes to the model until the
    annotator confirms."""
    api_client.force_authenticate(annotator)
    response = api_client.post(url("api-session-feedback", session),
                               {"feedback": "the answer is 7391", "client_request_id": "l"}, format="json")
    assert response.status_code == 200
    assert response.json() == {"sent": False, "code": "ground_truth_leak", "detail": response.json()["detail"],
                               "detected": ["the number 7391"]}
    assert "state an answer" in response.json()["detail"]
    assert session.rounds.count() == 1
    session.refresh_from_db()
    assert session.status == Session.Status.AWAITING_FEEDBACK
    confirmed = api_client.post(url("api-session-feedback", session),
                                {"feedback": "the answer is 7391", "client_request_id": "l", "confirm_leak": True},
                                format="json")
    assert confirmed.status_code == 201 and session.rounds.count() == 2


def test_feedback_in_the_wrong_state_is_409(api_client, annotator, session):
    api_client.force_authenticate(annotator)
    api_client.post(url("api-session-feedback", session), {"feedback": "a", "client_request_id": "1"}, format="json")
    response = api_client.post(url("api-session-feedback", session), {"feedback": "b", "client_request_id": "2"},
                               format="json")
    assert response.status_code == 409


@pytest.mark.parametrize("name", ["api-session", "api-session-feedback", "api-session-draft", "api-session-retry",
                                  "api-session-verdict", "api-session-heartbeat"])
def test_outsider_cannot_see_or_touch_the_session(api_client, outsider, session, name):
    api_client.force_authenticate(outsider)
    method = api_client.get if name == "api-session" else api_client.post
    response = method(url(name, session), {"feedback": "x", "client_request_id": "o", "draft": "x", "correct": True},
                      format="json")
    assert response.status_code == 404
    assert session.rounds.count() == 1


def test_anonymous_is_refused(api_client, session):
    assert api_client.get(url("api-session", session)).status_code == 403


def test_member_researcher_reads_but_cannot_act(api_client, researcher, session):
    api_client.force_authenticate(researcher)
    assert api_client.get(url("api-session", session)).status_code == 200
    response = api_client.post(url("api-session-feedback", session), {"feedback": "x", "client_request_id": "r"},
                               format="json")
    assert response.status_code == 404


def test_missing_session_is_404(api_client, annotator):
    api_client.force_authenticate(annotator)
    assert api_client.get(reverse("api-session", args=[999999])).status_code == 404


def test_draft_autosave_survives_reload(api_client, annotator, session):
    api_client.force_authenticate(annotator)
    assert api_client.post(url("api-session-draft", session), {"draft": "half-typed"}, format="json").status_code == 204
    assert api_client.get(url("api-session", session)).json()["feedback_draft"] == "half-typed"


def test_next_item_resumes_then_runs_dry(api_client, annotator, simulated_model, django_assert_max_num_queries):
    make_batch(models=[simulated_model], tasks=1)
    api_client.force_authenticate(annotator)
    first = api_client.post(reverse("api-next"), {}, format="json")
    assert first.status_code == 200
    with django_assert_max_num_queries(6):
        resumed = api_client.post(reverse("api-next"), {}, format="json")
    assert resumed.json()["session_id"] == first.json()["session_id"]
    session = Session.objects.get(pk=first.json()["session_id"])
    run_pending_round(session)
    for k in range(3):
        api_client.post(url("api-session-feedback", session), {"feedback": "no", "client_request_id": f"k{k}"},
                        format="json")
        run_pending_round(session)
    assert session.status == Session.Status.COMPLETED
    assert api_client.post(reverse("api-next"), {}, format="json").json() == {"state": "done"}
    assert api_client.post(reverse("api-next"), {"batch": "nope"}, format="json").status_code == 404


def test_session_page_hides_other_peoples_sessions(client, outsider, annotator, session):
    client.force_login(outsider)
    assert client.get(reverse("session-page", args=[session.id])).status_code == 404
    client.force_login(annotator)
    page = client.get(reverse("session-page", args=[session.id]))
    assert page.status_code == 200 and "7391" not in page.content.decode()


def test_task_images_are_private(client, outsider, annotator, session):
    from tests.factories import attach_image

    attach_image(session.task)
    sha = session.task.task_images.get().blob.sha256
    client.force_login(outsider)
    assert client.get(reverse("task-image", args=[sha])).status_code == 404
    client.force_login(annotator)
    response = client.get(reverse("task-image", args=[sha]))
    assert response.status_code == 200 and response["Content-Type"] == "image/png"


def test_openapi_schema_and_docs(client, researcher):
    client.force_login(researcher)
    schema = client.get(reverse("api-schema"))
    assert schema.status_code == 200 and b"/api/sessions/{session_id}/feedback/" in schema.content
    assert client.get(reverse("api-docs")).status_code == 200


def test_a_finished_session_says_when_it_ended_so_its_timer_stops(api_client, annotator, session):
    """Under way: no finished_at (the page's timer counts); completed: completed_at; skipped: when it was skipped."""
    from datetime import datetime, timedelta

    from annotate.assignments import assignment_skip

    api_client.force_authenticate(annotator)
    assert "finished_at" not in api_client.get(url("api-session", session)).json()
    ended = session.started_at + timedelta(seconds=71)
    Session.objects.filter(pk=session.pk).update(status=Session.Status.COMPLETED, completed_at=ended)
    body = api_client.get(url("api-session", session)).json()
    assert datetime.fromisoformat(body["finished_at"]) == ended
    Session.objects.filter(pk=session.pk).update(status=Session.Status.AWAITING_FEEDBACK, completed_at=None)
    assignment_skip(assignment=session.assignment, reason="The image does not load")
    body = api_client.get(url("api-session", session)).json()
    session.assignment.refresh_from_db()
    assert body["ended_as"] == "skipped"
    assert datetime.fromisoformat(body["finished_at"]) == session.assignment.finished_at
