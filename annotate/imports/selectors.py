"""Reads of import jobs, for the upload page and the API. Admin-only: callers check the role first."""

from __future__ import annotations

from annotate.errors import NotFound
from annotate.models import Job


def import_job_get(job_id: int) -> Job:
    job = Job.objects.select_related("batch").filter(pk=job_id, kind=Job.Kind.IMPORT).first()
    if job is None:
        raise NotFound(f"Import job {job_id} does not exist.")
    return job


def import_jobs_recent(limit: int = 20) -> list[Job]:
    return list(Job.objects.filter(kind=Job.Kind.IMPORT).select_related("batch").order_by("-created_at")[:limit])
