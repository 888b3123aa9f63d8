"""The worker side of a round: claim it, call the model through models_runtime, stream, save, verify.

Runs only inside a Celery task. The claim is a conditional UPDATE keyed by the Celery task id, so a message
redelivered after a worker died (acks_late) re-claims its own round, while a second copy of a finished round
finds nothing to do.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager

from django.conf import settings
from django.db import connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from annotate import health, quotas
from annotate.costs import batch_budget_update
from annotate.models import Round, RoundFailure, Session
from annotate.sessions import failures, realtime
from annotate.sessions.completion import session_completed
from annotate.sessions.failures import TIMED_OUT_MESSAGE, round_failure_record
from annotate.sessions.prompts import RoundTurn, conversation, round0_text, templates_for
from annotate.sessions.selectors import session_snapshot, session_with_task, sessions_with_task
from annotate.sessions.services import session_advance_after_verdict
from annotate.sessions.verification import verify
from models_runtime import (
    EmptyAnswerError,
    GenerationSettings,
    ImagePart,
    Message,
    ModelError,
    ModelRequest,
    StreamBrokenError,
    TaskContext,
    TransientModelError,
)
from models_runtime.registry import get_backend

logger = logging.getLogger(__name__)


class ClaimLost(Exception):
    """Another worker took this round over (ours was presumed dead)."""


class RoundTimedOut(Exception):
    """The model streamed past the config's soft time limit."""


class StreamBroke(Exception):
    """The model failed after the page had text from it: what was published (text, sequence) goes with the error."""

    def __init__(self, error: StreamBrokenError, text: str, seq: int):
        super().__init__(str(error))
        self.error, self.text, self.seq = error, text, seq




def round_claim(*, round_id: int, claim_token: str) -> bool:
    claimable = Q(generation_status=Round.Generation.QUEUED) | Q(
        generation_status=Round.Generation.RUNNING, claim_token=claim_token
    )
    return bool(
        Round.objects.filter(claimable, pk=round_id).update(
            generation_status=Round.Generation.RUNNING,
            claim_token=claim_token,
            attempts=F("attempts") + 1,
            started_at=timezone.now(),
            heartbeat_at=timezone.now(),
            answer_text="",
            stream_seq=0,
            error="",
        )
    )


def build_request(rnd: Round) -> ModelRequest:
    session = rnd.session
    task = session.task
    templates = templates_for(session.batch.prompt_templates)
    previous = list(session.rounds.filter(index__lte=rnd.index).order_by("index"))
    turns = conversation(
        round0=round0_text(question=task.question, options=task.options, answer_type=task.answer_type,
                           templates=templates),
        rounds=[RoundTurn(r.feedback_to_model, r.answer_text) for r in previous],
        templates=templates,
    )
    images = [ImagePart(ti.blob.file.open("rb").read()) for ti in task.task_images.select_related("blob")]
    messages = []
    for position, (role, text) in enumerate(turns):
        content = (*images, text) if position == 0 and images else (text,)
        messages.append(Message(role=role, content=tuple(content)))
    recorded = task.recorded_answers.get(session.model_config.name, []) if task.recorded_answers else []
    return ModelRequest(
        messages=tuple(messages),
        settings=GenerationSettings.from_dict(session.model_config.generation),
        context=TaskContext(
            task_id=task.external_id,
            round_index=rnd.index,
            answer_type=task.answer_type,
            options=tuple(task.options or ()),
            ground_truth=task.ground_truth,
            recorded_answers=tuple(recorded),
        ),
    )


def _save_partial(rnd: Round, claim_token: str, text: str, seq: int) -> None:
    saved = Round.objects.filter(pk=rnd.pk, claim_token=claim_token).update(
        answer_text=text, stream_seq=seq, heartbeat_at=timezone.now()
    )
    if not saved:
        raise ClaimLost(f"round {rnd.pk} was claimed by another worker")


PUBLISH_INTERVAL_SECONDS = 0.05


@contextmanager
def _heartbeat(round_id: int, claim_token: str):
    """While the worker holds a round, touch its ``heartbeat_at`` every ROUND_HEARTBEAT_SECONDS from a thread of
    its own: a model may take long before its first chunk, and the reaper (annotate.sessions.stalls) tells a dead
    worker's round from a slow model's by this heartbeat alone. The stream's own partial saves beat too."""
    interval = settings.ROUND_HEARTBEAT_SECONDS
    if interval <= 0:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(interval):
                still_ours = Round.objects.filter(
                    pk=round_id, claim_token=claim_token, generation_status=Round.Generation.RUNNING
                ).update(heartbeat_at=timezone.now())
                if not still_ours:  # finished, or handed on by the reaper: the stream loop finds out by itself
                    return
        except Exception:  # a database hiccup: the stream's partial saves still beat
            logger.warning("heartbeat of round %s stopped", round_id, exc_info=True)
        finally:
            connections.close_all()  # this thread's own connection

    thread = threading.Thread(target=beat, name=f"heartbeat-round-{round_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()


def _publish_stream(stream, rnd: Round, session_id: int, claim_token: str, deadline: float) -> int:
    """Relay the model's chunks to the page and save progress; returns how many messages were published.

    Past ``deadline`` (monotonic) the stream is closed and RoundTimedOut raised: Celery enforces time limits only
    in its prefork pool, and GPU workers run threads (one batch for their rounds), so the loop enforces its own.

    The first chunk goes out at once (it is what the annotator waits for); later ones are merged into at most
    one message per 50 ms, so a fast model does not flood the channel layer with one message per token.
    What is saved is exactly what was published (text and sequence number), so a snapshot and the messages
    after it never overlap.
    """
    published: list[str] = []
    pending: list[str] = []
    last_publish = last_save = time.monotonic()

    def publish() -> None:
        nonlocal last_publish
        text = "".join(pending)
        pending.clear()
        published.append(text)
        realtime.publish_chunk(session_id, rnd.index, len(published), text)
        last_publish = time.monotonic()

    try:
        for chunk in stream:
            if time.monotonic() > deadline:
                stream.close()  # stops this round's row only; the others in its batch go on
                raise RoundTimedOut(f"round {rnd.pk} passed its time limit")
            pending.append(chunk)
            if not published or time.monotonic() - last_publish >= PUBLISH_INTERVAL_SECONDS:
                publish()
            if time.monotonic() - last_save >= settings.STREAM_SAVE_INTERVAL_SECONDS:
                _save_partial(rnd, claim_token, "".join(published), len(published))
                last_save = time.monotonic()
    except StreamBrokenError as error:
        if pending:  # the page gets all that arrived, so the saved text and the messages agree
            publish()
        raise StreamBroke(error, "".join(published), len(published)) from error
    if pending:
        publish()
    return len(published)


def round_generate(*, round_id: int, claim_token: str) -> float | None:
    """Generate one round. Every model error fails the round (with Retry): the backend's RetryPolicy
    (models_runtime.retry) has already retried what was worth it, so nothing retries it again here.

    Returns None, or the seconds to wait when the model's quota (annotate.quotas) is full: the round is then
    handed back to the queue unclaimed, for the task to come back later; it is neither run nor failed."""
    if not round_claim(round_id=round_id, claim_token=claim_token):
        logger.info("round %s: nothing to do (finished or claimed elsewhere)", round_id)
        return None
    rnd = Round.objects.select_related("session__task", "session__batch", "session__model_config").get(pk=round_id)
    session = rnd.session
    config = session.model_config
    if config.unavailable_since is not None:  # the breaker is open: no request until a probe answers again
        round_fail(round_id=rnd.id, claim_token=claim_token, message=health.UNAVAILABLE_MESSAGE)
        return None
    slot = quotas.quota_take(config)
    if not isinstance(slot, quotas.Slot):
        Round.objects.filter(pk=rnd.pk, claim_token=claim_token, generation_status=Round.Generation.RUNNING).update(
            generation_status=Round.Generation.QUEUED, attempts=F("attempts") - 1)
        return slot
    try:
        _generate(rnd, config, claim_token, slot)
    finally:
        slot.release()
    return None


def _generate(rnd: Round, config, claim_token: str, slot: quotas.Slot) -> None:
    session = rnd.session
    deadline = time.monotonic() + config.soft_time_limit
    try:
        with _heartbeat(rnd.id, claim_token):
            request = build_request(rnd)
            backend = get_backend(config.backend, config.backend_settings)
            stream = backend.stream(request)
            published = _publish_stream(stream, rnd, session.id, claim_token, deadline)
            result = stream.result
    except StreamBroke as broke:
        message = model_error_message(broke.error)
        round_fail(round_id=rnd.id, claim_token=claim_token, message=message, partial=(broke.text, broke.seq))
        health.round_failed(config, message)
        return
    except ModelError as error:
        message = model_error_message(error)
        round_fail(round_id=rnd.id, claim_token=claim_token, message=message)
        health.round_failed(config, message)
        return
    except RoundTimedOut:
        round_fail(round_id=rnd.id, claim_token=claim_token, message=TIMED_OUT_MESSAGE)
        health.round_failed(config, TIMED_OUT_MESSAGE)
        return
    slot.release(tokens=(result.prompt_tokens or 0) + (result.completion_tokens or 0))
    round_finish(round_id=rnd.id, claim_token=claim_token, result=result, seq=published)
    health.round_answered(config)


def round_finish(*, round_id: int, claim_token: str, result, seq: int) -> None:
    """Save, verify and publish the final answer. The snapshot the page gets is built inside the transaction
    from the rows it holds (the session is locked, so nothing else changes them) instead of read again after
    the commit: five queries fewer per round on the worker."""
    with transaction.atomic():
        session = (
            sessions_with_task().select_for_update(of=("self",)).get(rounds__pk=round_id)
        )
        task = session.task
        checked = verify(task.answer_type, result.text, task.ground_truth, task.options)
        saved = Round.objects.filter(
            pk=round_id, claim_token=claim_token, generation_status=Round.Generation.RUNNING
        ).update(
            answer_text=result.text,
            stream_seq=seq,
            extracted_answer=checked.extracted[:500],
            auto_verdict=checked.verdict,
            final_verdict=checked.verdict,
            verdict_source=Round.VerdictSource.AUTO if checked.verdict is not None else "",
            generation_status=Round.Generation.DONE,
            finished_at=timezone.now(),
            latency_ms=round(result.latency * 1000),
            first_token_ms=round(result.time_to_first_token * 1000) if result.time_to_first_token else None,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
        )
        if not saved:
            raise ClaimLost(f"round {round_id} is no longer ours")
        rounds = list(session.rounds.order_by("index"))
        rnd = next(r for r in rounds if r.pk == round_id)
        if checked.verdict is None:
            session.status = Session.Status.AWAITING_VERDICT
            session.save(update_fields=["status"])
        else:
            session_advance_after_verdict(session, rnd)
        snapshot = session_snapshot(session, rounds)
        transaction.on_commit(lambda: realtime.publish_snapshot(session.id, snapshot))
    if session.batch.budget is not None and not session.batch.budget_reached:
        batch_budget_update(session.batch)  # over budget: the queue starts no new session of the batch
    if session.status == Session.Status.COMPLETED:  # after the page has its snapshot
        session_completed(session.id, in_worker=True)


def model_error_message(error: ModelError) -> str:
    """What the round's ``error`` says: the sentence annotators are shown beside Retry, then the detail that only
    researchers see (annotate.sessions.failures)."""
    if isinstance(error, StreamBrokenError):
        return failures.with_detail(failures.BROKE_OFF_MESSAGE, f"{error}; the text that arrived is kept with the "
                                                                "round but is not an answer")
    if isinstance(error, EmptyAnswerError):
        return failures.with_detail(failures.EMPTY_MESSAGE, error)
    if isinstance(error, TransientModelError):
        return failures.with_detail(failures.NO_ANSWER_MESSAGE, error)
    return failures.with_detail(failures.MODEL_FAILED_MESSAGE, error)


def round_fail(*, round_id: int, claim_token: str, message: str, partial: tuple[str, int] | None = None) -> None:
    """Fail the round with Retry. ``partial`` (text, sequence): what a broken stream had published, kept as the
    round's text for the researcher; a failed round is never verified, so it is not an answer."""
    kept = {"answer_text": partial[0], "stream_seq": partial[1]} if partial else {}
    with transaction.atomic():
        updated = Round.objects.filter(pk=round_id, claim_token=claim_token).update(
            generation_status=Round.Generation.FAILED, error=message[:2000], finished_at=timezone.now(), **kept
        )
        if not updated:
            return
        round_failure_record(round_id=round_id, cause=RoundFailure.Cause.MODEL)
        session_id = Round.objects.values_list("session_id", flat=True).get(pk=round_id)
        Session.objects.filter(pk=session_id).update(status=Session.Status.FAILED)
        transaction.on_commit(lambda: publish_session(session_id))


def publish_session(session_id: int) -> None:
    realtime.publish_snapshot(session_id, session_snapshot(session_with_task(session_id)))
