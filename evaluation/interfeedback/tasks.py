"""Celery entry points of InterFeedback's outcome counters (default queue): receive ids, re-fetch, call a service.

Both are idempotent, so late acknowledgement and redelivery are safe: a session is counted once, and a recount
job is claimed with a conditional update.
"""

from __future__ import annotations

from celery import shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.db import OperationalError

from annotate import queue_contract
from evaluation.interfeedback import services


@shared_task(name=queue_contract.OUTCOME_RECORD, bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=5, soft_time_limit=60, time_limit=90)
def outcome_record(self, session_id: int) -> bool:
    """Count a completed session (sent by annotate when a session completes)."""
    try:
        return services.outcome_record(session_id=session_id)
    except OperationalError as error:  # lock timeout, connection dropped: worth another try
        raise self.retry(countdown=get_exponential_backoff_interval(1, self.request.retries, 60, full_jitter=True)) from error


@shared_task(name=queue_contract.OUTCOME_RECOMPUTE, acks_late=True, reject_on_worker_lost=True, soft_time_limit=600, time_limit=660)
def outcome_recompute(job_id: int) -> None:
    """Run a full recompute job (a Job row of kind aggregate, made by services.recompute_job_create)."""
    services.recompute_job_run(job_id=job_id)
