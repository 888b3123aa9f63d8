"""The leak check (feedback that states an answer is flagged whatever its value) must not be an answer oracle.

Feedback stating the right answer and feedback stating a wrong one, in the same shape, get the same response:
same status, same headers, same body except what is derived from the typed text itself. Whether the stated
answer was right is recorded server-side (`LeakWarning`, `Round.stated_answer_correct`) and never reaches the
annotator: not in the submit response, not in the session API, not in the WebSocket snapshot.
"""

import json

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.urls import reverse

from annotate.models import LeakWarning, Round, Session
from annotate.queue.services import assignment_next
from annotate.sessions.consumers import SessionConsumer
from annotate.sessions.services import round_record_verdict
from tests.annotate.helpers import run_pending_round, send_feedback
from tests.factories import UserFactory, make_batch

OPTIONS = ["Circle", "Square", "Triangle", "Star"]

# (answer type, ground truth, options, feedback stating the right answer, the same shape stating a wrong one,
#  what the response says was detected in each)
CASES = {
    "choice letter": ("choice", "C", OPTIONS, "The answer is C.", "The answer is D.", ["option C"], ["option D"]),
    "choice question": ("choice", "C", OPTIONS, "Is it C?", "Is it B?", ["option C"], ["option B"]),
    "choice option text": ("choice", "C", OPTIONS, "Look for the triangle.", "Look for the square.",
                           ["an option's text: 'Triangle'"], ["an option's text: 'Square'"]),
    "number": ("number", "7391", [], "Is it 7391?", "Is it 7392?", ["the number 7391"], ["the number 7392"]),
    "number list": ("number", "7391", [], "Is it 7389, 7390, 7391 or 7392?", "Is it 7392, 7393, 7394 or 7395?",
                    ["the number 7389", "the number 7390", "the number 7391", "the number 7392"],
                    ["the number 7392", "the number 7393", "the number 7394", "the number 7395"]),
    "text": ("text", "eiffel tower", [], "It is the Eiffel Tower.", "It is the Louvre Museum.",
             ["'It is the Eiffel Tower'"], ["'It is the Louvre Museum'"]),
    "manual": ("manual", "a tabby cat", [], "The answer is a tabby cat.", "The answer is a black dog.",
               ["'The answer is a tabby cat'"], ["'The answer is a black dog'"]),
}
# Headers a client could read; the body's length differs only where the typed text does.
COMPARED_HEADERS = ("Content-Type", "Vary", "Allow", "X-Frame-Options", "Cache-Control", "Server-Timing")


def expected_correctness(answer_type: str) -> tuple[bool | None, bool | None]:
    """(right, wrong) as recorded: a manual task's reference is a judging guide, so a statement that does not
    match it is unknown rather than wrong."""
    return (True, None) if answer_type == "manual" else (True, False)


def awaiting_feedback(annotator, batch) -> Session:
    """The annotator's session on the batch's task, wrong at round 0 and waiting for round 1's feedback."""
    session = assignment_next(annotator=annotator, batch=batch).session
    run_pending_round(session)
    if session.status == Session.Status.AWAITING_VERDICT:  # manual: the annotator judges the answer wrong
        round_record_verdict(session_id=session.id, correct=False, annotator=annotator)
        session.refresh_from_db()
    assert session.status == Session.Status.AWAITING_FEEDBACK
    return session


@pytest.fixture
def twin_sessions(simulated_model, no_dispatch):
    """Two annotators on the same task (overlap 2), each waiting for feedback: one will state the right answer,
    the other a wrong one."""

    def make(answer_type, truth, options):
        batch = make_batch(models=[simulated_model], overlap=2, answer_type=answer_type, ground_truth=truth,
                           options=options, question="Which one is it?")
        right_user, wrong_user = UserFactory(username="righty"), UserFactory(username="wrongy")
        return (right_user, awaiting_feedback(right_user, batch)), (wrong_user, awaiting_feedback(wrong_user, batch))

    return make


def post_feedback(client, user, session, text, **extra):
    client.force_authenticate(user)
    return client.post(reverse("api-session-feedback", args=[session.id]),
                       {"feedback": text, "client_request_id": f"req-{session.id}", **extra}, format="json")


def without_detected(response) -> dict:
    return {key: value for key, value in response.json().items() if key != "detected"}


def headers(response) -> dict:
    return {name: response.headers.get(name) for name in COMPARED_HEADERS}


def anonymized(snapshot: dict) -> dict:
    """A snapshot without what differs between two sessions on the same task: ids, the typed text and the
    measured model timings of round 0."""
    snapshot = json.loads(json.dumps(snapshot))
    snapshot.pop("id")
    for rnd in snapshot["rounds"]:
        rnd.update(feedback_text="<typed>", latency_ms=None, first_token_ms=None)
    return snapshot


@pytest.mark.django_db
@pytest.mark.parametrize("case", CASES)
def test_right_and_wrong_stated_answers_get_the_same_warning(api_client, twin_sessions, case):
    answer_type, truth, options, right_text, wrong_text, right_detected, wrong_detected = CASES[case]
    (right_user, right), (wrong_user, wrong) = twin_sessions(answer_type, truth, options)

    said_right = post_feedback(api_client, right_user, right, right_text)
    said_wrong = post_feedback(api_client, wrong_user, wrong, wrong_text)

    # A warning, not an error: 200 with nothing sent (a sent feedback is 201), the same for right and wrong
    assert (said_right.status_code, said_wrong.status_code) == (200, 200)
    assert without_detected(said_right) == without_detected(said_wrong)
    assert without_detected(said_right)["code"] == "ground_truth_leak"
    assert without_detected(said_right)["sent"] is False
    assert (said_right.json()["detected"], said_wrong.json()["detected"]) == (right_detected, wrong_detected)
    assert headers(said_right) == headers(said_wrong)
    assert b"stated_answer_correct" not in said_right.content + said_wrong.content
    # Nothing was sent; each warning is on record, with its correctness known to the server only.
    assert right.rounds.count() == wrong.rounds.count() == 1
    warnings = {w.annotator_id: w for w in LeakWarning.objects.all()}
    assert (warnings[right_user.id].stated_answer_correct, warnings[wrong_user.id].stated_answer_correct) == (
        expected_correctness(answer_type))
    assert warnings[right_user.id].stated_answer == "; ".join(right_detected)
    assert {w.round_index for w in warnings.values()} == {1}


@pytest.mark.django_db
@pytest.mark.parametrize("case", CASES)
def test_confirmed_right_and_wrong_answers_look_the_same_to_the_annotator(api_client, twin_sessions, case):
    answer_type, truth, options, right_text, wrong_text, right_detected, _ = CASES[case]
    (right_user, right), (wrong_user, wrong) = twin_sessions(answer_type, truth, options)
    for user, session, text in ((right_user, right, right_text), (wrong_user, wrong, wrong_text)):
        assert post_feedback(api_client, user, session, text).json()["code"] == "ground_truth_leak"

    sent_right = post_feedback(api_client, right_user, right, right_text, confirm_leak=True)
    sent_wrong = post_feedback(api_client, wrong_user, wrong, wrong_text, confirm_leak=True)

    assert (sent_right.status_code, sent_wrong.status_code) == (201, 201)
    assert anonymized(sent_right.json()) == anonymized(sent_wrong.json())
    assert headers(sent_right) == headers(sent_wrong)
    api_client.force_authenticate(right_user)
    read_right = api_client.get(reverse("api-session", args=[right.id]))
    api_client.force_authenticate(wrong_user)
    read_wrong = api_client.get(reverse("api-session", args=[wrong.id]))
    assert anonymized(read_right.json()) == anonymized(read_wrong.json())
    for response in (sent_right, sent_wrong, read_right, read_wrong):
        assert b"stated_answer" not in response.content
    # The server knows: the sent rounds carry what was detected and whether it was right.
    right_round, wrong_round = right.rounds.get(index=1), wrong.rounds.get(index=1)
    assert right_round.leak_flagged and wrong_round.leak_flagged
    assert right_round.stated_answer == "; ".join(right_detected)
    assert (right_round.stated_answer_correct, wrong_round.stated_answer_correct) == expected_correctness(answer_type)
    # One warning each: the confirmed send follows the warning already on record.
    assert LeakWarning.objects.filter(session=right).count() == LeakWarning.objects.filter(session=wrong).count() == 1


@pytest.mark.django_db
def test_a_confirmed_send_without_a_prior_warning_still_leaves_one_record(annotator, simulated_model, no_dispatch):
    session = awaiting_feedback(annotator, make_batch(models=[simulated_model]))
    send_feedback(session, "It is 7391.", confirm_leak=True)
    warning = LeakWarning.objects.get(session=session)
    assert (warning.round_index, warning.stated_answer, warning.stated_answer_correct) == (1, "the number 7391", True)


@pytest.mark.django_db
def test_the_last_round_never_warns(annotator, simulated_model, no_dispatch):
    session = awaiting_feedback(annotator, make_batch(models=[simulated_model]))
    for _ in (1, 2):
        send_feedback(session, "Count again, more carefully.")
    assert session.status == Session.Status.AWAITING_FEEDBACK and session.rounds.count() == 3
    last = send_feedback(session, "The answer is 7391: count every row.")  # round 3: the answer is revealed
    assert last.index == 3 and not last.leak_flagged and last.stated_answer == ""
    assert last.stated_answer_correct is None
    assert not LeakWarning.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_warning_is_committed_although_nothing_is_sent(api_client, annotator, simulated_model,
                                                                 no_dispatch):
    from django.db import connection

    session = awaiting_feedback(annotator, make_batch(models=[simulated_model]))
    refused = post_feedback(api_client, annotator, session, "It should be 7390.")
    assert refused.status_code == 200 and refused.json()["detected"] == ["the number 7390"]
    assert not connection.in_atomic_block  # autocommit: what is visible now is committed
    warning = LeakWarning.objects.get(session=session)
    assert (warning.annotator_id, warning.stated_answer_correct) == (annotator.id, False)
    assert session.rounds.count() == 1


@pytest.mark.django_db(transaction=True)
def test_websocket_snapshot_never_carries_the_correctness(annotator, simulated_model, no_dispatch):
    session = awaiting_feedback(annotator, make_batch(models=[simulated_model]))
    send_feedback(session, "It is 7391.", confirm_leak=True)
    assert Round.objects.get(session=session, index=1).stated_answer_correct is True

    async def first_message():
        comm = WebsocketCommunicator(SessionConsumer.as_asgi(), f"/ws/sessions/{session.id}/")
        comm.scope["user"] = annotator
        comm.scope["url_route"] = {"kwargs": {"session_id": session.id}}
        connected, _ = await comm.connect()
        assert connected
        message = await comm.receive_json_from(timeout=5)
        await comm.disconnect()
        return message

    message = async_to_sync(first_message)()
    assert message["type"] == "snapshot" and message["session"]["rounds"][1]["leak_flagged"] is True
    assert "stated_answer" not in json.dumps(message) and "ground_truth" not in message["session"]


@pytest.mark.django_db
def test_the_researchers_sessions_export_carries_the_stated_answer(annotator, simulated_model, no_dispatch):
    from annotate.sessions.selectors import sessions_with_rounds
    from evaluation.exports.renderers.sessions import session_record

    session = awaiting_feedback(annotator, make_batch(models=[simulated_model]))
    send_feedback(session, "Is it 7390 or 7391?", confirm_leak=True)
    exported = sessions_with_rounds().get(pk=session.pk)
    exported.follows_reveal = False  # what the export's selector annotates (this session is still under way)
    exported.sequence_position = 1
    rounds = session_record(exported)["rounds"]
    assert [(r["leak_flagged"], r["stated_answer"], r["stated_answer_correct"]) for r in rounds] == [
        (False, "", None), (True, "the number 7390; the number 7391", True)]


@pytest.mark.django_db
def test_every_warning_is_answered_after_the_same_time_right_or_wrong(api_client, twin_sessions, settings,
                                                                       monkeypatch):
    # What the view waits is recorded, not timed: each warning is padded to LEAK_WARNING_MS from its arrival, so
    # the work behind it (which may differ by microseconds) does not show in when the answer comes.
    from annotate.sessions import apis

    settings.LEAK_WARNING_MS = 60_000
    waited = []
    monkeypatch.setattr(apis.time, "sleep", waited.append)
    answer_type, truth, options, right_text, wrong_text, *_ = CASES["number"]
    (right_user, right), (wrong_user, wrong) = twin_sessions(answer_type, truth, options)
    assert post_feedback(api_client, right_user, right, right_text).json()["code"] == "ground_truth_leak"
    assert post_feedback(api_client, wrong_user, wrong, wrong_text).json()["code"] == "ground_truth_leak"
    assert len(waited) == 2 and all(59 < seconds <= 60 for seconds in waited)
