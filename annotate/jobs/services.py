"""Writes of Job rows shared by every kind of long job (imports, recounts, exports, model checks)."""

from __future__ import annotations

from django.utils import timezone

from annotate.models import Job


def job_fail(*, job_id: int, error: str) -> None:
    """Mark the job failed with its error (cut to 2,000 characters); a job that already succeeded stays so."""
    Job.objects.filter(pk=job_id).exclude(status=Job.Status.SUCCEEDED).update(
        status=Job.Status.FAILED, error=error[:2000], message="Failed", finished_at=timezone.now()
    )
