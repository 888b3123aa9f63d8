"""Celery entry points of InterFeedback sessions: receive ids, re-fetch, call a service.

Task names are the queue contract (messages already queued survive an upgrade that moves code): set explicitly."""

from __future__ import annotations

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from annotate import queue_contract
from annotate.sessions import generation, stalls


# No Celery retry of a model error: the model backend's RetryPolicy (models_runtime.retry) is the one layer that
# retries a model call, within one budget per round; generation.round_generate fails the round (with Retry) on any
# model error. The one Celery retry is a full quota: the round was not started, so nothing is retried twice.
# A worker lost mid-round is redelivered (acks_late) or failed by the stalled-round reaper, not retried here.
@shared_task(name=queue_contract.ROUND_GENERATE, bind=True, acks_late=True, reject_on_worker_lost=True)
def round_generate(self, round_id: int) -> None:
    claim_token = self.request.id or f"local-{round_id}"
    try:
        wait = generation.round_generate(round_id=round_id, claim_token=claim_token)
    except SoftTimeLimitExceeded:
        generation.round_fail(round_id=round_id, claim_token=claim_token, message=generation.TIMED_OUT_MESSAGE)
        return
    except generation.ClaimLost:
        return
    if wait is not None:  # the model's quota is full: come back later (the same task id claims the round then)
        raise self.retry(countdown=wait, max_retries=None)


@shared_task(name=queue_contract.ROUNDS_REAP_STALLED, ignore_result=True, expires=30)
def rounds_reap_stalled() -> int:
    """Celery beat, every few seconds: fail the rounds whose worker stopped, and send again those whose message
    was lost (annotate.sessions.stalls)."""
    return stalls.rounds_reap_stalled() + stalls.rounds_requeue_lost()
