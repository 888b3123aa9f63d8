"""Export files are deleted after EXPORT_RETENTION_DAYS (beat, hourly; or `manage.py expire_exports`): the job row
stays, marked expired, and its download answers 410 Gone saying why."""

from __future__ import annotations

import datetime as dt
from io import StringIO

import pytest
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.utils import timezone

from annotate.models import Job
from evaluation.exports import jobs as export_jobs
from evaluation.exports import tasks as export_tasks
from tests.factories import ModelConfigFactory, make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def exports(settings, tmp_path, researcher):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.EXPORT_RETENTION_DAYS = 30
    batch = make_batch(models=[ModelConfigFactory()], members=[researcher])

    def export(days_ago: float) -> Job:
        job = Job.objects.create(kind=Job.Kind.EXPORT, batch=batch, status=Job.Status.SUCCEEDED, created_by=researcher,
                                 params={"format": "jsonl", "gzip": False}, report={"sessions": 1},
                                 finished_at=timezone.now() - dt.timedelta(days=days_ago))
        job.result_file.save(f"export-{job.pk}.jsonl", ContentFile(b'{"session_id": 1}\n'))
        return job

    return batch, export


def test_old_files_are_deleted_and_their_rows_kept(exports):
    batch, export = exports
    old, recent = export(31), export(2)
    old_path = old.result_file.path
    assert export_jobs.export_files_expire() == [old.pk]
    old.refresh_from_db()
    recent.refresh_from_db()
    assert not old.result_file and old.report["expired_at"] and "retention" in old.message
    assert not __import__("os").path.exists(old_path)
    assert recent.result_file and recent.result_file.storage.exists(recent.result_file.name)
    assert export_jobs.export_files_expire() == []  # once


def test_zero_days_keeps_every_file(exports, settings):
    _, export = exports
    export(3650)
    settings.EXPORT_RETENTION_DAYS = 0
    assert export_jobs.export_files_expire() == []


def test_the_download_of_an_expired_file_is_410_with_the_reason(exports, api_client, researcher):
    batch, export = exports
    job = export(40)
    export_jobs.export_files_expire()
    api_client.force_authenticate(researcher)
    response = api_client.get(f"/api/batches/{batch.id}/exports/{job.pk}/download/")
    assert response.status_code == 410
    assert response.json()["code"] == "gone" and "30 days" in response.json()["detail"]


def test_the_beat_task_and_the_command(exports):
    _, export = exports
    first, second = export(45), export(50)
    out = StringIO()
    call_command("expire_exports", "--dry-run", stdout=out)
    assert "would delete the files of 2 export job(s)" in out.getvalue()
    assert Job.objects.get(pk=first.pk).result_file  # a dry run deletes nothing
    assert export_tasks.export_files_expire() == 2
    out = StringIO()
    call_command("expire_exports", stdout=out)
    assert "deleted the files of 0 export job(s)" in out.getvalue()
    assert not Job.objects.get(pk=second.pk).result_file
