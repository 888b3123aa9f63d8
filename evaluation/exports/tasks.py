"""Celery entry points of export jobs (default queue): receive a job's id, claim it, write its file; and the
hourly expiry of old export files.

All are idempotent, so late acknowledgement and redelivery are safe: a job is claimed with a conditional update.
"""

from __future__ import annotations

from celery import shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.db import OperationalError

from annotate import queue_contract
from annotate.jobs.services import job_fail
from evaluation.exports import jobs as export_jobs


@shared_task(name=queue_contract.SESSIONS_EXPORT, bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=3)
def sessions_export(self, job_id: int) -> None:
    """Write a sessions export job's JSONL file (a Job row of kind export, made by export_jobs).

    Under the workers' global soft/hard time limits, which export_jobs's takeover of stale jobs relies on.
    """
    _export_run(self, job_id)


def _export_run(task, job_id: int) -> None:
    try:
        export_jobs.sessions_export_job_run(job_id=job_id)  # runs a bundle job too (its params say which)
    except OperationalError as error:  # the run put the job back in the queue: try again later, then give up
        if task.request.retries >= task.max_retries:
            job_fail(job_id=job_id, error=f"Database error, {task.max_retries} retries failed: {error}")
            raise
        raise task.retry(exc=error, countdown=get_exponential_backoff_interval(1, task.request.retries, 60, full_jitter=True)) from error


@shared_task(name=queue_contract.BUNDLE_EXPORT, bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=3)
def bundle_export(self, job_id: int) -> None:
    """Write a study bundle job's zip (a Job row of kind export with params.export = bundle, made by export_jobs).
    Claimed, retried and taken over exactly as a sessions export."""
    _export_run(self, job_id)


@shared_task(name=queue_contract.EXPORT_FILES_EXPIRE, ignore_result=True)
def export_files_expire() -> int:
    """Celery beat, hourly: delete export files past EXPORT_RETENTION_DAYS (the job rows stay, marked expired)."""
    return len(export_jobs.export_files_expire())
