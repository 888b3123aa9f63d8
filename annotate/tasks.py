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
        generation.round_fail(round_id=round_id, claim_token=claim_token, message=generation.TIMED_OUT_MESSAGE)
    except generation.ClaimLost:
        return


@shared_task(acks_late=True, reject_on_worker_lost=True)
def batch_import_job(job_id: int) -> None:
    """Run an uploaded batch import (the Job row carries the file and the options)."""
    from annotate.services import import_jobs  # services import this module lazily; keep the cycle lazy too

    try:
        import_jobs.import_job_run(job_id=job_id)
    except SoftTimeLimitExceeded:
        import_jobs.import_job_fail(job_id=job_id, message="The import took too long and was stopped; nothing was written.")


# acks_late off on purpose: a check is cheap to run again, and a model that kills its worker (out of memory)
# must not be redelivered to the next worker in a loop. The job row already says "running" meanwhile.
@shared_task(acks_late=False)
def model_config_check_job(job_id: int) -> None:
    """The admin's "Test this model": one short prompt with an image (a Job row of kind model_check)."""
    from annotate.services import model_check

    try:
        model_check.model_config_check_run(job_id=job_id)
    except SoftTimeLimitExceeded:
        model_check.model_check_fail(job_id=job_id, error="The model took too long to answer (time limit).")
    except Exception as error:  # anything else still ends the job, so the page stops waiting
        model_check.model_check_fail(job_id=job_id, error=f"{type(error).__name__}: {error}")
        raise
