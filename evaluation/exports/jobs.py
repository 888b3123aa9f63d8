"""The sessions export and the study bundle as background jobs (long jobs are rows with status, progress and error).

A page or API request only creates a `Job` row (kind `export`) and, once it is committed, queues
`evaluation.tasks.sessions_export` (evaluation/exports/tasks.py) on the default queue. The worker writes the JSON lines (optionally gzipped)
to a temporary file, updating the row's progress every `PROGRESS_EVERY` sessions, then stores the file in the
job's `result_file` through Django's storage. Whoever may read the batch downloads it from
`report["download_url"]`, which the job endpoints (`/api/jobs/<id>/`) return once the job has succeeded.

The records are those of the synchronous export (`exports.build_export(..., "sessions", ...)`), with the same
report filters, so a job's file and a direct download of the same selection are byte for byte the same.

A study bundle job (``params["export"] == "bundle"``, task `evaluation.tasks.bundle_export`) runs the same way
and writes the zip of evaluation.exports.bundle instead; it is claimed, stored, downloaded and expired like the
others.
"""

from __future__ import annotations

import gzip
import logging
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import IO, TypedDict, cast

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.files import File
from django.db import OperationalError, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from annotate import queue_contract
from annotate.errors import ApplicationError, Conflict, Gone, NotFound, PermissionDenied
from annotate.jobs.services import job_fail
from annotate.models import Batch, Job, User
from annotate.people.access import batch_for_researcher
from evaluation.exports import bundle
from evaluation.exports import registry as exports
from evaluation.exports.filters import ReportFilters, parse_filters
from evaluation.exports.renderers.sessions import SESSION_FORMATS
from evaluation.kinds import kind_of

logger = logging.getLogger(__name__)

BUNDLE = "bundle"  # params["export"] of a study bundle job
PROGRESS_EVERY = 1000  # sessions between two progress updates of the job row (one UPDATE each)
GZIP_LEVEL = 6  # zlib's default: most of level 9's size at a third of its time
GZIP_CONTENT_TYPE = "application/gzip"
# The task runs under the workers' global time limits (CELERY_TASK_SOFT_TIME_LIMIT / CELERY_TASK_TIME_LIMIT,
# 600 / 660 s by default; about 2,000 sessions/s, so 299k sessions take some 150 s). The hard limit is below the
# broker's visibility timeout (900 s), so a live worker's task is never handed to a second one; a killed worker's
# task is, after that timeout, and then finds its job RUNNING for longer than the hard limit: stale, taken over.


def _stale_after() -> timedelta:
    return timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)


# --- create and queue -------------------------------------------------------------------------------


def sessions_export_job_create(
    *, batch: Batch, user: User | None, filters: ReportFilters, fmt: str = "jsonl", compress: bool = False
) -> Job:
    """Queue an export of the batch's completed sessions (with these filters) as a Job row.

    The task is sent once the row is committed; if the broker cannot be reached the job is marked failed with
    that reason. Nothing is ever exported inside the request.
    """
    if fmt not in SESSION_FORMATS:
        raise ApplicationError(f"Unknown format {fmt!r} for sessions; expected one of {', '.join(SESSION_FORMATS)}.",
                               code="bad_format")
    if filters.annotator and not User.objects.filter(pseudonym=filters.annotator).exists():
        raise ApplicationError(f"No annotator with pseudonym {filters.annotator!r}.", code="bad_filter")
    params = {"export": "sessions", "format": fmt, "gzip": bool(compress), "filters": filters.query_params()}
    job = Job.objects.create(kind=Job.Kind.EXPORT, batch=batch, created_by=user, params=params,
                             message="Waiting for a worker")
    transaction.on_commit(lambda: sessions_export_job_dispatch(job.id))
    return job


def bundle_export_job_create(*, batch: Batch, user: User | None) -> Job:
    """Queue the study bundle of the batch (every table, figure and export in one zip) as a Job row."""
    job = Job.objects.create(kind=Job.Kind.EXPORT, batch=batch, created_by=user, params={"export": BUNDLE},
                             message="Waiting for a worker")
    transaction.on_commit(lambda: sessions_export_job_dispatch(job.id, task=queue_contract.BUNDLE_EXPORT))
    return job


def sessions_export_job_dispatch(job_id: int, task: str = queue_contract.SESSIONS_EXPORT) -> None:
    try:
        queue_contract.send_task(task, args=[job_id], retry=True, retry_policy={"max_retries": 2})
    except Exception as error:  # kombu/redis raise several types for an unreachable broker; all mean "not queued"
        logger.exception("could not queue sessions export job %s", job_id)
        job_fail(job_id=job_id, error=f"The export could not be queued: the task queue is unreachable ({error}). "
                                      "Nothing was exported; try again once the broker and a worker are running.")


# --- run (in the worker) ----------------------------------------------------------------------------


def _claim(job_id: int) -> Job | None:
    """QUEUED (or stale RUNNING) -> RUNNING with a conditional update; None when it is not ours to run."""
    now = timezone.now()
    claimable = Q(status=Job.Status.QUEUED) | Q(status=Job.Status.RUNNING, started_at__lt=now - _stale_after())
    claimed = Job.objects.filter(claimable, pk=job_id, kind=Job.Kind.EXPORT).update(
        status=Job.Status.RUNNING, started_at=now, progress=0.0, message="Starting", error=""
    )
    return Job.objects.select_related("batch").filter(pk=job_id).first() if claimed else None


def _progress(job: Job, done: int, expected: int) -> None:
    estimate = expected >= done and expected > 0  # counters lagging behind the sessions: no estimate to show
    Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, started_at=job.started_at).update(
        progress=min(0.99, round(done / expected, 3)) if estimate else 0.0,
        message=f"Wrote {done:,} of about {expected:,} sessions" if estimate else f"Wrote {done:,} sessions",
    )


class BundleReport(TypedDict, total=False):
    """What a bundle job adds to its report."""

    files: list[str]
    skipped: dict[str, str]  # what the bundle lacks -> why


def _batch(job: Job) -> Batch:
    """The job's batch (loaded with the job); a job whose batch was deleted is never run nor downloaded."""
    if job.batch is None:
        raise NotFound("The batch of this export no longer exists.")
    return job.batch


def _is_bundle(job: Job) -> bool:
    return (job.params or {}).get("export") == BUNDLE


def _write_bundle(job: Job, handle: IO[bytes]) -> tuple[int, int, BundleReport]:
    """Write the study bundle; progress is the share of session lines written (they are nearly all the work)."""
    batch = _batch(job)
    expected = exports.export_size(batch, "sessions") if kind_of(batch).counts_sessions else 0

    def progress(message: str, lines: int) -> None:
        share = min(0.99, round(lines / (2 * expected), 3)) if expected else 0.0
        Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, started_at=job.started_at).update(
            progress=share, message=message)

    summary = bundle.bundle_write(batch, handle, progress=progress)
    return summary.sessions, expected, {"files": summary.files, "skipped": summary.skipped}


def _write(job: Job, handle: IO[bytes]) -> tuple[int, int]:
    """Write the export into the open binary file `handle`. Returns (sessions written, sessions expected)."""
    batch = _batch(job)
    params = job.params or {}
    filters = parse_filters(params.get("filters") or {})
    fmt = params.get("format", "jsonl")
    # The expected total is read from the counters (one indexed count), what the report page shows; progress is
    # an estimate capped below 1 until the last line is written, and the report gives the exact number.
    expected = exports.export_size(batch, "sessions", filters)
    _progress(job, 0, expected)
    # The sessions export is always streamed (evaluation.exports.registry), never held in memory.
    stream = cast(Iterator[bytes], exports.build_export(batch, "sessions", fmt, filters).stream)
    out: IO[bytes] | gzip.GzipFile = (
        gzip.GzipFile(fileobj=handle, mode="wb", mtime=0, compresslevel=GZIP_LEVEL) if params.get("gzip") else handle)
    written = 0
    try:
        for written, line in enumerate(stream, 1):
            out.write(line)
            if written % PROGRESS_EVERY == 0:
                _progress(job, written, expected)
    finally:
        if out is not handle:
            out.close()  # writes the gzip trailer; leaves `handle` open
    return written, expected


def download_filename(job: Job) -> str:
    if _is_bundle(job):
        return bundle.bundle_filename(_batch(job))
    params = job.params or {}
    name = exports.export_filename(_batch(job), "sessions", params.get("format", "jsonl"))
    return name + (".gz" if params.get("gzip") else "")


def _stored_name(job: Job) -> str:
    """Short and free of the batch name (FileField names are at most 100 characters): exports/sessions-<id>.<ext>"""
    if _is_bundle(job):
        return f"exports/bundle-{job.pk}.zip"
    params = job.params or {}
    fmt = params.get("format", "jsonl")
    return f"exports/sessions-{job.pk}.{exports.EXTENSIONS.get(fmt, fmt)}" + (".gz" if params.get("gzip") else "")


def content_type(job: Job) -> str:
    if _is_bundle(job):
        return "application/zip"
    params = job.params or {}
    return GZIP_CONTENT_TYPE if params.get("gzip") else exports.CONTENT_TYPES[params.get("format", "jsonl")]


def sessions_export_job_run(*, job_id: int) -> Job | None:
    """Claim and run a queued export job. Idempotent: a job that is finished or held by a live worker is skipped.

    A database error leaves the job queued again and propagates (the task retries it); any other error fails
    the job with its message.
    """
    job = _claim(job_id)
    if job is None:
        return None
    if job.batch_id is None:
        job_fail(job_id=job_id, error="The batch of this export no longer exists.")
        return job
    started = time.perf_counter()
    try:
        with tempfile.TemporaryFile() as handle:
            extra: BundleReport = {}
            if _is_bundle(job):
                written, expected, extra = _write_bundle(job, handle)
            else:
                written, expected = _write(job, handle)
            size = handle.tell()
            handle.seek(0)
            filename = download_filename(job)
            job.result_file.save(_stored_name(job), File(handle, name=filename), save=False)
    except OperationalError:
        Job.objects.filter(pk=job_id, status=Job.Status.RUNNING, started_at=job.started_at).update(
            status=Job.Status.QUEUED, message="Database error; the export will be retried"
        )
        raise
    except SoftTimeLimitExceeded:
        job_fail(job_id=job_id, error=f"The export took longer than {settings.CELERY_TASK_SOFT_TIME_LIMIT} s and "
                                      "was stopped; narrow it with filters (model, category, dates).")
        return job
    except Exception as error:
        logger.exception("export job %s failed", job_id)
        job_fail(job_id=job_id, error=f"{type(error).__name__}: {error}")
        raise
    report = {
        "sessions": written, "expected": expected, "format": job.params.get("format", "jsonl"),
        "gzip": bool(job.params.get("gzip")), "filters": job.params.get("filters", {}), "filename": filename,
        "bytes": size, "seconds": round(time.perf_counter() - started, 3),
        "download_url": reverse("api-batch-export-download", args=[job.batch_id, job.pk]), **extra,
    }
    done = (f"Bundled {len(extra['files'])} files ({size:,} bytes)" if _is_bundle(job)
            else f"Exported {written:,} sessions ({size:,} bytes)")
    finished = Job.objects.filter(pk=job_id, status=Job.Status.RUNNING, started_at=job.started_at).update(
        status=Job.Status.SUCCEEDED, progress=1.0, report=report, result_file=job.result_file.name,
        finished_at=timezone.now(), message=done,
    )
    if not finished:  # another worker took the job over meanwhile: its file is the one kept
        job.result_file.delete(save=False)
    job.refresh_from_db()
    return job


# --- reads ------------------------------------------------------------------------------------------


def export_job_for_batch(batch: Batch, job_id: int) -> Job:
    job = Job.objects.select_related("batch").filter(pk=job_id, batch=batch, kind=Job.Kind.EXPORT).first()
    if job is None:
        raise NotFound(f"Export {job_id} does not exist in batch {batch.name!r}.")
    return job


def export_job_for_download(user: User, batch_id: int, job_id: int) -> Job:
    """A finished export's job, for a user who may read its batch (a researcher member, or an admin).

    Anyone else gets NotFound, as for a missing batch (no probing of ids); an unfinished job is a Conflict.
    """
    try:
        batch = batch_for_researcher(user, batch_id)
    except PermissionDenied:
        raise NotFound(f"Batch {batch_id} does not exist or you are not a member of it.") from None
    job = export_job_for_batch(batch, job_id)
    if job.status != Job.Status.SUCCEEDED:
        state = job.error or job.message or job.get_status_display()
        raise Conflict(f"Export {job_id} has no file: it is {job.get_status_display().lower()} ({state}).")
    if job.report.get("expired_at"):
        raise Gone(f"The file of export {job_id} was deleted on {job.report['expired_at'][:10]} after "
                   f"{settings.EXPORT_RETENTION_DAYS} days (the retention period); run the export again.")
    if not job.result_file.name or not job.result_file.storage.exists(job.result_file.name):
        raise NotFound(f"The file of export {job_id} is no longer stored; run the export again.")
    return job


# --- retention --------------------------------------------------------------------------------------


def export_files_expire(*, now: datetime | None = None, dry_run: bool = False) -> list[int]:
    """Delete the files of export jobs that finished more than EXPORT_RETENTION_DAYS ago (0: keep forever). The
    job rows stay, marked expired, so a download says why it is gone. Returns the ids of the jobs expired."""
    days = settings.EXPORT_RETENTION_DAYS
    if days <= 0:
        return []
    now = now or timezone.now()
    old = Job.objects.filter(kind=Job.Kind.EXPORT, status=Job.Status.SUCCEEDED,
                             finished_at__lt=now - timedelta(days=days)).exclude(result_file="")
    expired: list[int] = []
    for job in old.iterator():
        if dry_run:
            expired.append(job.pk)
            continue
        job.result_file.delete(save=False)  # a file already missing is fine
        report = {**(job.report or {}), "expired_at": now.isoformat()}
        Job.objects.filter(pk=job.pk).update(result_file="", report=report,
                                             message=f"File deleted after {days} days (retention)")
        expired.append(job.pk)
    return expired
