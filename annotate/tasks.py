"""Celery entry points: receive ids, re-fetch, call a service."""

from __future__ import annotations

import random

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from annotate.services import generation
from models_runtime import TransientModelError

MAX_TRANSIENT_RETRIES = 4


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=MAX_TRANSIENT_RETRIES)
def round_generate(self, round_id: int) -> None:
    claim_token = self.request.id or f"local-{round_id}"
    try:
        generation.round_generate(round_id=round_id, claim_token=claim_token)
    except TransientModelError as error:
        if self.request.retries >= self.max_retries:
            generation.round_fail(
                round_id=round_id, claim_token=claim_token,
                message=f"The model did not answer after {self.max_retries + 1} tries: {error}",
            )
            return
        # Exponential backoff with jitter; the retry keeps the task id, so it re-claims the same round.
        raise self.retry(countdown=min(60, 2 ** self.request.retries) + random.uniform(0, 1)) from error
    except SoftTimeLimitExceeded:
        generation.round_fail(round_id=round_id, claim_token=claim_token, message="The model took too long to answer.")
    except generation.ClaimLost:
        return


@shared_task(acks_late=True, reject_on_worker_lost=True)
def batch_import_job(job_id: int) -> None:
    """Run an uploaded batch import (the Job row carries the file and the options)."""
    from annotate.services import batches  # services import this module lazily; keep the cycle lazy too

    try:
        batches.import_job_run(job_id=job_id)
    except SoftTimeLimitExceeded:
        batches.import_job_fail(job_id=job_id, message="The import took too long and was stopped; nothing was written.")
