"""Reads of Job rows (imports, aggregations, exports, benchmark runs, model checks) with their access rule.

Admins read every job; researchers read the jobs they started and those of batches they are members of.
Anyone else gets "not found" for a job they may not see (no id probing).
"""

from __future__ import annotations

from django.utils import timezone

from annotate.errors import NotFound, PermissionDenied
from annotate.models import Job, User

# A job queued longer than this without a worker taking it gets a hint on its page and in the API.
QUEUED_HINT_SECONDS = 15


def job_for_user(user: User, job_id: int) -> Job:
    if not user.is_researcher_role:
        raise PermissionDenied("Only researchers and admins can read jobs.")
    job = Job.objects.select_related("batch").filter(pk=job_id).first()
    if job is None or not _may_read(user, job):
        raise NotFound(f"Job {job_id} does not exist or is not yours.")
    return job


def _may_read(user: User, job: Job) -> bool:
    if user.is_admin_role or job.created_by_id == user.id:
        return True
    return job.batch is not None and job.batch.members.filter(pk=user.pk).exists()


def job_is_finished(job: Job) -> bool:
    return job.status in (Job.Status.SUCCEEDED, Job.Status.FAILED)


def job_hint(job: Job) -> str:
    """A line for a job that seems stuck (the usual cause: no worker consumes its queue)."""
    if job.status == Job.Status.QUEUED and (timezone.now() - job.created_at).total_seconds() > QUEUED_HINT_SECONDS:
        queue = (job.params or {}).get("queue") or "default"
        return (f"Still queued: is a Celery worker consuming {queue!r}? "
                f"Start one with: celery -A annotate worker -Q {queue}")
    return ""
