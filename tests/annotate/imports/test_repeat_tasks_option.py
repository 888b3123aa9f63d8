"""The batch option `allow_repeat_tasks` set at import: the command, the API and the upload form; a re-import
without it leaves it as it is."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from annotate.importkit.common import ImportReport
from annotate.imports.batches import batch_settings_clean
from annotate.imports.jobs import import_job_run
from annotate.models import Batch, Job
from tests.annotate.imports.files import jsonl_bytes, task

pytestmark = pytest.mark.django_db


def test_command_flag(sample_zip):
    call_command("import_batch", str(sample_zip), "--name", "cmd", "--no-progress")
    assert Batch.objects.get(name="cmd").allow_repeat_tasks is False

    call_command("import_batch", str(sample_zip), "--name", "cmd", "--no-progress", "--allow-repeat-tasks")
    assert Batch.objects.get(name="cmd").allow_repeat_tasks is True

    call_command("import_batch", str(sample_zip), "--name", "cmd", "--no-progress")  # not named: unchanged
    assert Batch.objects.get(name="cmd").allow_repeat_tasks is True


def test_api_field(api_client, admin_user, django_capture_on_commit_callbacks):
    api_client.force_authenticate(admin_user)

    def upload(name, **fields):
        with django_capture_on_commit_callbacks(execute=False):
            response = api_client.post("/api/imports/", {
                "file": SimpleUploadedFile("t.jsonl", jsonl_bytes([task("a")])), "name": name, **fields,
            }, format="multipart")
        assert response.status_code == 202, response.json()
        import_job_run(job_id=response.json()["job_id"])
        return Job.objects.get(pk=response.json()["job_id"]).params["settings"]

    assert upload("api-batch", allow_repeat_tasks="true") == {"allow_repeat_tasks": True}
    assert Batch.objects.get(name="api-batch").allow_repeat_tasks is True
    assert upload("api-batch") == {}  # left out: the batch keeps its setting
    assert Batch.objects.get(name="api-batch").allow_repeat_tasks is True
    upload("api-batch", allow_repeat_tasks="false")
    assert Batch.objects.get(name="api-batch").allow_repeat_tasks is False

    bad = api_client.post("/api/imports/", {"file": SimpleUploadedFile("t.jsonl", jsonl_bytes([task("a")])),
                                            "name": "x", "allow_repeat_tasks": "maybe"}, format="multipart")
    assert bad.status_code == 400 and "allow_repeat_tasks" in bad.json(), bad.json()


def test_form_choice(client, admin_user, django_capture_on_commit_callbacks):
    client.force_login(admin_user)
    assert b'name="allow_repeat_tasks"' in client.get("/imports/new/").content

    with django_capture_on_commit_callbacks(execute=False):
        response = client.post("/imports/new/", {
            "file": SimpleUploadedFile("t.jsonl", jsonl_bytes([task("a")])), "name": "page-batch",
            "kind": "interfeedback", "allow_repeat_tasks": "yes",
        })

    assert response.status_code == 302
    import_job_run(job_id=Job.objects.get().pk)
    assert Batch.objects.get(name="page-batch").allow_repeat_tasks is True


def test_settings_must_be_true_or_false():
    report = ImportReport(kind="settings", batch="b")
    assert batch_settings_clean({"allow_repeat_tasks": "yes"}, report) == {}
    assert [str(p) for p in report.problems] == ["field settings.allow_repeat_tasks: must be true or false, got 'yes'"]
