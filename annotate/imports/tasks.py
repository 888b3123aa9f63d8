"""Celery entry point of uploaded imports (default queue). The task name is the queue contract: set explicitly."""

from __future__ import annotations

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from annotate import queue_contract
from annotate.imports import jobs as import_jobs
from annotate.jobs.services import job_fail


@shared_task(name=queue_contract.BATCH_IMPORT, acks_late=True, reject_on_worker_lost=True)
def batch_import_job(job_id: int) -> None:
    """Run an uploaded batch import (the Job row carries the file and the options)."""
    try:
        import_jobs.import_job_run(job_id=job_id)
    except SoftTimeLimitExceeded:
        job_fail(job_id=job_id, error="The import took too long and was stopped; nothing was written.")
