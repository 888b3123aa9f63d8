"""Writes of the InterFeedback-Human session engine (rounds 0-3).

Everything the annotator typed is saved before the model is called; the model is called only from a Celery
task dispatched on commit (never inside a web request).
"""

from __future__ import annotations

import logging
from typing import cast

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from annotate import queue_contract
from annotate.errors import ApplicationError, Conflict, NotFound
from annotate.models import Assignment, LeakWarning, ModelConfig, Round, RoundFailure, Session, User
from annotate.sessions.completion import session_completed
from annotate.sessions.failures import QUEUE_UNREACHABLE_MESSAGE, round_failure_record
from annotate.sessions.prompts import feedback_for_model, templates_for
from annotate.sessions.selectors import rounds_in_order, session_with_task, sessions_with_task
from annotate.sessions.verification import (
    StatedAnswer,
    detect_stated_answers,
    stated_answer_correct,
)
from annotate.wording import shown

logger = logging.getLogger(__name__)

MAX_FEEDBACK_CHARS = 4000


def round_generation_queue(round_id: int, config: ModelConfig) -> None:
    """Queue the model call after commit, on the config's model queue and with its time limits."""
    options = {"queue": config.queue_name, "soft_time_limit": config.soft_time_limit, "time_limit": config.time_limit}

    def send() -> None:
        try:
            queue_contract.send_task(queue_contract.ROUND_GENERATE, args=[round_id], **options)
        except Exception:  # broker down: say so on the page (Retry), never run the model in the web process
            logger.exception("could not queue round %s on %s", round_id, config.queue_name)
            _mark_undeliverable(round_id)

    transaction.on_commit(send)


def _mark_undeliverable(round_id: int) -> None:
    if Round.objects.filter(pk=round_id, generation_status=Round.Generation.QUEUED).update(
        generation_status=Round.Generation.FAILED, error=QUEUE_UNREACHABLE_MESSAGE
    ):
        round_failure_record(round_id=round_id, cause=RoundFailure.Cause.QUEUE_UNREACHABLE)
    Session.objects.filter(rounds__pk=round_id, status=Session.Status.GENERATING).update(status=Session.Status.FAILED)


def session_new(*, assignment: Assignment) -> tuple[Session, Round]:
    """A fresh assignment's session and its round 0 (the model answers the bare question), not saved yet: the
    queue saves them with the reservation (annotate.queue.reservation), then queues round 0
    (`round_generation_queue`)."""
    item = assignment.work_item
    session = Session(
        batch_id=item.batch_id,
        task_id=cast(int, item.task_id),  # an InterFeedback item: it has a task (work_item_task_xor_conversation)
        model_config=item.model_config,  # loaded with the item by the queue: no query here
        annotator_id=assignment.annotator_id,
        assignment=assignment,
        status=Session.Status.GENERATING,
    )
    return session, Round(session=session, index=0)


def _find_session(session_id: int, annotator: User | None, *, for_update: bool = False) -> Session:
    """The session with its task, batch and model; ``for_update`` locks its row (of=("self",): not the batch and
    model rows every session shares). With an annotator, only their own session: the ownership check costs no
    query of its own."""
    if for_update:
        sessions = sessions_with_task().select_for_update(of=("self",))
        if annotator is not None:
            sessions = sessions.filter(annotator=annotator)
        session = sessions.filter(pk=session_id).first()
    else:
        session = session_with_task(session_id, annotator.pk if annotator is not None else None)
    if session is None:
        raise NotFound(_("Session %(id)s does not exist or is not yours.") % {"id": session_id})
    return session


def round_submit_feedback(
    *,
    session_id: int,
    feedback: str,
    client_request_id: str,
    confirm_leak: bool = False,
    typing_ms: int | None = None,
    annotator: User | None = None,
) -> tuple[Round, list[Round]]:
    """Save the annotator's feedback as the next round and queue the model's re-answer. Returns that round and
    all the session's rounds in order (for the page's snapshot, without reading them again).

    Idempotent on ``client_request_id``: a retried or double-clicked submit returns the round already made.
    In rounds before the last, feedback that states an answer (whatever its value) needs ``confirm_leak``;
    each warning is recorded as a `LeakWarning`, with whether the stated answer was right (never shown).
    With ``annotator``, a session of someone else is reported as missing.

    No lock is held while the feedback is checked: the round is saved only if the session is still awaiting
    feedback, in the same step that moves it on (a conditional update). When it no longer is, the session is read
    again and the answer is what a lock would have given: the twin request's round, or a conflict.
    """
    feedback = (feedback or "").strip()
    if not client_request_id or len(client_request_id) > 64:
        raise ApplicationError("client_request_id is required (at most 64 characters).", code="bad_request_id")
    session, rounds = _session_with_rounds(session_id, annotator)
    if twin := _round_of_request(rounds, client_request_id):
        return twin, rounds
    _require_awaiting_feedback(session)
    rnd = _feedback_round(session, rounds, feedback, client_request_id, confirm_leak, typing_ms)
    if not _save_claiming_session(session, rnd):
        # The session moved on since it was read: a double click's twin saved its round first, or the worker or
        # a lease expiry changed it.
        session, rounds = _session_with_rounds(session_id, annotator)
        if twin := _round_of_request(rounds, client_request_id):
            return twin, rounds
        _require_awaiting_feedback(session)
        raise Conflict(_("This session changed while your feedback was on its way: reload it and send it again."))
    if rnd.leak_flagged:
        _leak_warning_record_once(session, rnd)
    round_generation_queue(rnd.id, session.model_config)
    return rnd, [*rounds, rnd]


def _session_with_rounds(session_id: int, annotator: User | None) -> tuple[Session, list[Round]]:
    session = _find_session(session_id, annotator)
    return session, rounds_in_order(session.pk)  # at most max_rounds + 1


def _round_of_request(rounds: list[Round], client_request_id: str) -> Round | None:
    return next((r for r in rounds if r.client_request_id == client_request_id), None)


def _require_awaiting_feedback(session: Session) -> None:
    if session.status != Session.Status.AWAITING_FEEDBACK:
        raise Conflict(_("This session is not waiting for feedback (it is %(status)s).")
                       % {"status": session.get_status_display().lower()})


def _feedback_round(session: Session, rounds: list[Round], feedback: str, client_request_id: str,
                    confirm_leak: bool, typing_ms: int | None) -> Round:
    """The next round of a session awaiting feedback, checked and unsaved."""
    if not feedback:
        raise ApplicationError(_("Feedback is empty: tell the model what is wrong."), code="empty_feedback")
    if len(feedback) > MAX_FEEDBACK_CHARS:
        raise ApplicationError(_("Feedback is too long (%(length)s characters; at most %(max)s).")
                               % {"length": len(feedback), "max": MAX_FEEDBACK_CHARS})
    index = rounds[-1].index + 1
    max_rounds = session.batch.max_rounds
    if index > max_rounds:
        raise Conflict(_("All %(max)s feedback rounds are used.") % {"max": max_rounds})
    task = session.task
    stated = detect_stated_answers(feedback, task.answer_type, task.options) if index < max_rounds else []
    # Right or wrong, the same work and the same answer: the check must not tell the annotator which.
    correct = stated_answer_correct(stated, task.answer_type, task.ground_truth, task.options) if stated else None
    if stated and not confirm_leak:
        # Saved before refusing: the service runs outside a transaction, so the raise does not undo it.
        _leak_warning_record(session, index, _stated_summary(stated), correct)
        raise ApplicationError(
            _("Your feedback seems to state an answer, which the model must find by itself until the last round. "
              "Rephrase it, or confirm to send it anyway."),
            code="ground_truth_leak",
            extra={"detected": [shown(s.description) for s in stated]},  # in the annotator's language
        )
    templates = templates_for(session.batch.prompt_templates)
    return Round(
        session=session,
        index=index,
        feedback_text=feedback,
        feedback_kind=Round.FeedbackKind.GROUND_TRUTH if index == max_rounds else Round.FeedbackKind.HUMAN,
        feedback_to_model=feedback_for_model(
            typed=feedback, round_index=index, max_rounds=max_rounds, ground_truth=task.ground_truth,
            templates=templates,
        ),
        leak_flagged=bool(stated),
        stated_answer=_stated_summary(stated),
        stated_answer_correct=correct,
        client_request_id=client_request_id,
        typing_ms=typing_ms,
    )


def _stated_summary(stated: list[StatedAnswer]) -> str:
    return "; ".join(s.description for s in stated)[: Round._meta.get_field("stated_answer").max_length]


def _leak_warning_record(session: Session, round_index: int, stated_answer: str, correct: bool | None) -> None:
    if session.annotator_id is None:  # an automated run: no person was warned
        return
    LeakWarning.objects.create(session=session, annotator_id=session.annotator_id, round_index=round_index,
                               stated_answer=stated_answer, stated_answer_correct=correct)


def _leak_warning_record_once(session: Session, rnd: Round) -> None:
    """A confirmed send follows its warning, already recorded; a client that confirms without having been warned
    first still leaves one record, so sends-anyway never outnumber warnings."""
    if not LeakWarning.objects.filter(session=session, round_index=rnd.index).exists():
        _leak_warning_record(session, rnd.index, rnd.stated_answer, rnd.stated_answer_correct)


def _save_claiming_session(session: Session, rnd: Round) -> bool:
    """Save the round and move its session from awaiting feedback to generating (clearing the draft), both or
    neither; False when the session was no longer awaiting feedback."""
    expect = {"status": Session.Status.AWAITING_FEEDBACK}
    changes = {"status": Session.Status.GENERATING, "feedback_draft": ""}
    with transaction.atomic():
        if not Session.objects.filter(pk=session.pk, **expect).update(**changes):
            return False
        rnd.save()
    for name, value in changes.items():
        setattr(session, name, value)
    return True


def session_save_draft(*, session_id: int, draft: str, annotator: User) -> None:
    """Autosave of the annotator's feedback box, so a reload or another device finds the typed text. One UPDATE
    (the ownership check included); a second query only to tell a missing session from a finished one."""
    own = Session.objects.filter(pk=session_id, annotator=annotator).exclude(status=Session.Status.COMPLETED)
    if own.update(feedback_draft=(draft or "")[:MAX_FEEDBACK_CHARS]):
        return
    if not Session.objects.filter(pk=session_id, annotator=annotator).exists():
        raise NotFound(_("Session %(id)s does not exist or is not yours.") % {"id": session_id})


def round_retry(*, session_id: int, annotator: User | None = None) -> Round:
    """Queue a failed round again (the Retry button)."""
    with transaction.atomic():
        session = _find_session(session_id, annotator, for_update=True)
        rnd = session.rounds.order_by("-index").first()
        if session.status != Session.Status.FAILED or rnd is None or rnd.generation_status != Round.Generation.FAILED:
            raise Conflict(_("Only a failed model answer can be retried."))
        Round.objects.filter(pk=rnd.pk).update(
            generation_status=Round.Generation.QUEUED, error="", claim_token="", answer_text="", stream_seq=0
        )
        session.status = Session.Status.GENERATING
        session.save(update_fields=["status"])
        round_generation_queue(rnd.id, session.model_config)
    rnd.refresh_from_db()
    return rnd


def round_record_verdict(*, session_id: int, correct: bool, annotator: User | None = None) -> Round:
    """The annotator's judgement for a ``manual`` task (the model's answer is right or wrong)."""
    with transaction.atomic():
        session = _find_session(session_id, annotator, for_update=True)
        if session.status != Session.Status.AWAITING_VERDICT:
            raise Conflict(_("This session is not waiting for your verdict."))
        rnd = cast(Round, session.rounds.order_by("-index").first())  # awaiting a verdict: on its last round
        rnd.final_verdict = bool(correct)
        rnd.verdict_source = Round.VerdictSource.ANNOTATOR
        rnd.save(update_fields=["final_verdict", "verdict_source"])
        session_advance_after_verdict(session, rnd)
        if session.status == Session.Status.COMPLETED:  # counted for the reports by a task, not in the request
            transaction.on_commit(lambda: session_completed(session.id, in_worker=False))
    return rnd


def session_advance_after_verdict(session: Session, rnd: Round) -> None:
    """Correct → done at this round; wrong at the last round → never corrected; else wait for feedback.

    A completed session still has to be counted for the reports: each caller does that its own way (a task
    after commit from a web request, at once from the worker)."""
    from annotate.assignments import assignment_complete

    if rnd.final_verdict:
        session.status, session.corrected_round = Session.Status.COMPLETED, rnd.index
    elif rnd.index >= session.batch.max_rounds:
        session.status, session.corrected_round = Session.Status.COMPLETED, None
    else:
        session.status = Session.Status.AWAITING_FEEDBACK
        if rnd.index + 1 == session.batch.max_rounds and session.revealed_at is None:
            session.revealed_at = timezone.now()  # the page shows the ground truth for the last round's feedback
    if session.status == Session.Status.COMPLETED:
        session.completed_at = timezone.now()
        if session.assignment_id:
            assignment_complete(assignment_id=session.assignment_id)
    session.save(update_fields=["status", "corrected_round", "completed_at", "revealed_at"])
