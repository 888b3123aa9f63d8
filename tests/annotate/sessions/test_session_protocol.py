"""The InterFeedback-Human protocol (rounds 0-3) through the services, with offline models."""

import pytest

from annotate.errors import ApplicationError, Conflict
from annotate.models import Assignment, ModelConfig, Round, Session, WorkItem
from annotate.queue.services import assignment_next
from annotate.sessions import generation
from annotate.sessions.selectors import session_snapshot
from annotate.sessions.services import round_record_verdict, round_retry, round_submit_feedback
from tests.annotate.helpers import all_at_once, run_pending_round, send_feedback
from tests.factories import ModelConfigFactory, attach_image, make_batch

pytestmark = pytest.mark.django_db


def start(annotator, model, **task_fields):
    batch = make_batch(models=[model], **task_fields)
    assignment = assignment_next(annotator=annotator, batch=batch)
    session = assignment.session
    assert session.status == Session.Status.GENERATING
    assert session.rounds.get().generation_status == Round.Generation.QUEUED
    return session


def snapshot(session):
    from annotate.sessions.selectors import access_session

    return session_snapshot(access_session(session.annotator, session.id))


def test_full_session_to_round_three_reveals_ground_truth_only_then(annotator, simulated_model):
    session = start(annotator, simulated_model)
    attach_image(session.task)
    r0 = run_pending_round(session)
    assert r0.final_verdict is False and r0.verdict_source == "auto"
    assert session.status == Session.Status.AWAITING_FEEDBACK
    for index in (1, 2):
        snap = snapshot(session)
        assert "ground_truth" not in snap and "7391" not in str(snap)
        rnd = send_feedback(session)
        assert rnd.index == index and rnd.final_verdict is False
        assert rnd.feedback_to_model == "Count again, more carefully."
    snap = snapshot(session)
    assert snap["ground_truth_revealed"] is True and snap["ground_truth"] == "7391" and snap["next_round"] == 3
    r3 = send_feedback(session, "Look at the whole table.")
    assert r3.feedback_kind == Round.FeedbackKind.GROUND_TRUTH
    assert r3.feedback_to_model == "Look at the whole table. The correct answer is 7391."
    assert r3.final_verdict is True
    assert session.status == Session.Status.COMPLETED and session.corrected_round == 3
    assignment = Assignment.objects.get(pk=session.assignment_id)
    assert assignment.status == Assignment.Status.COMPLETED
    assert WorkItem.objects.get(pk=assignment.work_item_id).completed_count == 1


def test_model_sees_history_and_images_but_never_the_ground_truth_before_round_three(annotator, simulated_model):
    session = start(annotator, simulated_model, options=["1", "2", "3"], answer_type="choice", ground_truth="B")
    attach_image(session.task)
    run_pending_round(session)
    send_feedback(session, "Not quite.")
    round_submit_feedback(session_id=session.id, feedback="Try again.", client_request_id="r2")
    request = generation.build_request(session.rounds.get(index=2))
    roles = [m.role for m in request.messages]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert len(request.messages[0].images) == 1
    assert "A. 1\nB. 2\nC. 3" in request.messages[0].text_content
    assert request.messages[-1].text_content == "Try again.\nPlease answer the question again."
    assert all("correct answer" not in m.text_content.lower() for m in request.messages)


def test_corrected_in_round_one(annotator):
    model = ModelConfigFactory(backend_settings={"chunk_delay": 0, "correct_from_round": 1})
    session = start(annotator, model)
    run_pending_round(session)
    send_feedback(session)
    assert session.status == Session.Status.COMPLETED and session.corrected_round == 1
    with pytest.raises(Conflict, match="not waiting for feedback"):
        round_submit_feedback(session_id=session.id, feedback="more", client_request_id="late")


def test_right_at_once_is_round_zero(annotator):
    model = ModelConfigFactory(backend=ModelConfig.Backend.REPLAY, name="gpt-4o", backend_settings={})
    session = start(annotator, model, recorded_answers={"gpt-4o": ["Answer: 7391"]})
    run_pending_round(session)
    assert session.corrected_round == 0 and session.status == Session.Status.COMPLETED


def test_never_corrected_after_the_last_round(annotator):
    model = ModelConfigFactory(backend=ModelConfig.Backend.REPLAY, name="stubborn", backend_settings={})
    session = start(annotator, model, recorded_answers={"stubborn": ["Answer: 1", "Answer: 2", "Answer: 3", "Answer: 4"]})
    run_pending_round(session)
    for _ in range(3):
        send_feedback(session)
    assert session.status == Session.Status.COMPLETED and session.corrected_round is None
    assert session.rounds.count() == 4
    with pytest.raises(Conflict):
        round_submit_feedback(session_id=session.id, feedback="again", client_request_id="x")


def test_feedback_is_refused_while_the_model_answers(annotator, simulated_model):
    session = start(annotator, simulated_model)
    with pytest.raises(Conflict, match="model is answering"):
        round_submit_feedback(session_id=session.id, feedback="hm", client_request_id="early")


def test_submits_are_idempotent_on_client_request_id(annotator, simulated_model):
    session = start(annotator, simulated_model)
    run_pending_round(session)
    first, _ = round_submit_feedback(session_id=session.id, feedback="Look again", client_request_id="same")
    second, _ = round_submit_feedback(session_id=session.id, feedback="Look again", client_request_id="same")
    assert first.pk == second.pk and session.rounds.count() == 2


@pytest.mark.parametrize("bad, code", [("", "empty_feedback"), ("   ", "empty_feedback")])
def test_empty_feedback_is_refused(annotator, simulated_model, bad, code):
    session = start(annotator, simulated_model)
    run_pending_round(session)
    with pytest.raises(ApplicationError) as error:
        round_submit_feedback(session_id=session.id, feedback=bad, client_request_id="e")
    assert error.value.code == code and session.rounds.count() == 1


def test_leaking_feedback_needs_confirmation_and_is_recorded(annotator, simulated_model):
    session = start(annotator, simulated_model)
    run_pending_round(session)
    with pytest.raises(ApplicationError) as error:
        round_submit_feedback(session_id=session.id, feedback="It is 7391.", client_request_id="leak")
    assert error.value.code == "ground_truth_leak" and session.rounds.count() == 1
    rnd, _ = round_submit_feedback(session_id=session.id, feedback="It is 7391.", client_request_id="leak",
                                   confirm_leak=True)
    assert rnd.leak_flagged is True


def test_permanent_model_error_fails_the_round_and_retry_requeues_it(annotator):
    model = ModelConfigFactory(backend_settings={"chunk_delay": 0, "fail": "permanent"})
    session = start(annotator, model)
    rnd = run_pending_round(session)
    assert rnd.generation_status == Round.Generation.FAILED and "permanent" in rnd.error
    assert session.status == Session.Status.FAILED
    assert snapshot(session)["rounds"][0]["error"]
    model.backend_settings = {"chunk_delay": 0}
    model.save()
    round_retry(session_id=session.id)
    rnd = run_pending_round(session)
    assert rnd.generation_status == Round.Generation.DONE and session.status == Session.Status.AWAITING_FEEDBACK


def test_manual_answers_wait_for_the_annotators_verdict(annotator, simulated_model):
    session = start(annotator, simulated_model, answer_type="manual", ground_truth="a tabby cat")
    snap = snapshot(session)
    assert snap["judging_reference"] == "a tabby cat" and "ground_truth" not in snap
    run_pending_round(session)
    assert session.status == Session.Status.AWAITING_VERDICT
    round_record_verdict(session_id=session.id, correct=True)
    session.refresh_from_db()
    assert session.corrected_round == 0 and session.rounds.get().verdict_source == "annotator"


def test_a_redelivered_task_reclaims_its_own_round_but_not_anothers(annotator, simulated_model):
    session = start(annotator, simulated_model)
    rnd = session.rounds.get()
    assert generation.round_claim(round_id=rnd.id, claim_token="worker-a")
    assert not generation.round_claim(round_id=rnd.id, claim_token="worker-b")
    assert generation.round_claim(round_id=rnd.id, claim_token="worker-a")  # redelivery after a crash
    generation.round_generate(round_id=rnd.id, claim_token="worker-a")
    rnd.refresh_from_db()
    assert rnd.generation_status == Round.Generation.DONE and rnd.attempts == 3
    generation.round_generate(round_id=rnd.id, claim_token="worker-a")  # a late duplicate does nothing
    assert session.rounds.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_dead_broker_fails_the_round_visibly_and_keeps_the_text(annotator, simulated_model, settings):
    from unittest import mock

    batch = make_batch(models=[simulated_model])
    with mock.patch("annotate.queue_contract.send_task", side_effect=ConnectionError("broker down")):
        session = assignment_next(annotator=annotator, batch=batch).session
    session.refresh_from_db()
    rnd = session.rounds.get()
    assert session.status == Session.Status.FAILED
    assert rnd.generation_status == Round.Generation.FAILED and "could not be reached" in rnd.error


def test_round_past_its_time_limit_fails_with_a_clear_message_in_any_worker_pool(annotator):
    # Celery's time limits hold only in the prefork pool; GPU workers run threads, so the stream loop stops
    # a round itself once the config's soft time limit has passed.
    slow = ModelConfigFactory(name="slow-student", backend_settings={"chunk_delay": 0.25}, soft_time_limit=1)
    session = start(annotator, slow)
    rnd = run_pending_round(session)
    assert rnd.generation_status == Round.Generation.FAILED
    assert rnd.error == generation.TIMED_OUT_MESSAGE
    assert session.status == Session.Status.FAILED
    assert rnd.final_verdict is None and rnd.extracted_answer == ""  # a cut-off answer is not judged


def complete_in_round_three(annotator, model) -> Session:
    session = start(annotator, model)
    run_pending_round(session)
    for _ in range(3):
        send_feedback(session)
    assert session.status == Session.Status.COMPLETED
    return session


def test_worker_counts_a_completed_session_at_once_without_another_task(annotator, simulated_model, monkeypatch):
    from evaluation.models import CountedSession

    queued = []
    monkeypatch.setattr("annotate.queue_contract.send_task", lambda name, args, **_: queued.append(args[0]))
    session = complete_in_round_three(annotator, simulated_model)
    assert CountedSession.objects.filter(session_id=session.id, corrected_round=3).exists()
    assert queued == []  # no outcome task queued: the worker counted it itself


def test_a_busy_counter_hands_the_count_to_the_retrying_task(annotator, simulated_model, monkeypatch):
    from django.db import OperationalError

    def locked(**_kwargs):
        raise OperationalError("lock timeout")

    queued = []
    monkeypatch.setattr("evaluation.interfeedback.services.outcome_record", locked)
    monkeypatch.setattr("annotate.queue_contract.send_task", lambda name, args, **_: queued.append(args[0]))
    session = complete_in_round_three(annotator, simulated_model)
    assert queued == [session.id]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("same_request", [True, False], ids=["double-click", "two-tabs"])
def test_concurrent_submits_make_one_round(annotator, simulated_model, no_dispatch, same_request):
    """Ten submits at once: one round. Twins of one request (a double click, a retry) all get that round; other
    requests (another tab) are told the session moved on."""
    session = start(annotator, simulated_model)
    run_pending_round(session)

    def submit(n):
        try:
            rnd, _ = round_submit_feedback(session_id=session.id, feedback="Count again.",
                                           client_request_id="same" if same_request else f"tab-{n}")
            return rnd.pk
        except Conflict as error:
            return str(error)

    results = all_at_once(submit, list(range(10)), timeout=60)
    new_round = session.rounds.get(index=1)
    assert session.rounds.count() == 2
    conflicts = [r for r in results if r != new_round.pk]
    assert len(results) == 10 and results.count(new_round.pk) == (10 if same_request else 1)
    assert all("not waiting for feedback" in c or "changed while" in c for c in conflicts), conflicts
    session.refresh_from_db()
    assert session.status == Session.Status.GENERATING
