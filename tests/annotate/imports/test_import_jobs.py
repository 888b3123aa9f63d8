"""The import job: claimed once, stale jobs taken over, broker failures shown on the job, the Celery entry point."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from annotate.imports import jobs as import_jobs
from annotate.imports.tasks import batch_import_job
from annotate.models import Job
from tests.annotate.imports.files import jsonl_bytes, task

pytestmark = pytest.mark.django_db


def _job(admin_user) -> Job:
    upload = SimpleUploadedFile("t.jsonl", jsonl_bytes([task("a")]))
    return import_jobs.import_job_create(upload=upload, name="j", kind="interfeedback", created_by=admin_user)


def test_celery_task_runs_the_job_once(admin_user):
    job = _job(admin_user)

    batch_import_job(job.pk)  # called directly, as the worker would
    batch_import_job(job.pk)  # a duplicate delivery finds it done

    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.report["counts"]["created"] == 1
    assert job.started_at and job.finished_at and job.batch.name == "j"


def test_a_running_job_is_left_alone_unless_stale(admin_user):
    job = _job(admin_user)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, started_at=timezone.now())
    assert import_jobs.import_job_run(job_id=job.pk) is None

    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(hours=1))
    assert import_jobs.import_job_run(job_id=job.pk).status == Job.Status.SUCCEEDED


def test_broker_down_marks_the_job_failed(admin_user, monkeypatch):
    job = _job(admin_user)

    def refuse(name, args, **options):
        raise ConnectionError("connection refused")

    monkeypatch.setattr("annotate.queue_contract.send_task", refuse)
    import_jobs.import_job_dispatch(job.pk)

    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "could not be queued" in job.error


def test_unexpected_error_fails_the_job_and_is_raised(admin_user, monkeypatch):
    job = _job(admin_user)

    def explode(**kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(import_jobs, "batch_import", explode)
    with pytest.raises(RuntimeError):
        import_jobs.import_job_run(job_id=job.pk)

    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.error == "Unexpected error: disk on fire"


def test_progress_is_written_to_the_job(admin_user):
    job = _job(admin_user)
    progress = import_jobs._job_progress(job.pk)

    progress("images", 5, 10)

    job.refresh_from_db()
    assert job.progress == pytest.approx(0.525) and job.message == "Checking images: 5 of 10"
