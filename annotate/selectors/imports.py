"""Reads of import jobs, for the upload page and the API. Admin-only: callers check the role first."""

from __future__ import annotations

from annotate.errors import NotFound
from annotate.models import Job


def import_job_get(job_id: int) -> Job:
    job = Job.objects.select_related("batch").filter(pk=job_id, kind=Job.Kind.IMPORT).first()
    if job is None:
        raise NotFound(f"Import job {job_id} does not exist.")
    return job


def import_job_payload(job: Job) -> dict:
    params = job.params or {}
    report = job.report or {}
    return {
        "id": job.pk,
        "status": job.status,
        "progress": job.progress,
        "message": job.message,
        "error": job.error,
        "batch": job.batch.name if job.batch_id else None,
        "name": params.get("name"),
        "kind": params.get("kind"),
        "filename": params.get("filename"),
        "dry_run": bool(params.get("dry_run")),
        "update": bool(params.get("update")),
        "counts": report.get("counts", {}),
        "report": report,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
        "done": job.status in (Job.Status.SUCCEEDED, Job.Status.FAILED),
    }


def import_jobs_recent(limit: int = 20) -> list[Job]:
    return list(Job.objects.filter(kind=Job.Kind.IMPORT).select_related("batch").order_by("-created_at")[:limit])
