"""The batch option `open_to_all_annotators` on re-import: what the upload form shows is what the batch gets (keep
it, switch it on, switch it off), and the API keeps a setting left out."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.imports.jobs import import_job_run
from annotate.models import Batch, Job
from tests.annotate.imports.files import jsonl_bytes, task

pytestmark = pytest.mark.django_db


def test_the_form_switches_it_on_keeps_it_and_switches_it_off(client, admin_user, django_capture_on_commit_callbacks):
    client.force_login(admin_user)
    page = client.get("/imports/new/").content.decode()
    assert 'name="open_to_all_annotators"' in page and 'value="no"' in page

    def upload(**fields):
        with django_capture_on_commit_callbacks(execute=False):
            response = client.post("/imports/new/", {
                "file": SimpleUploadedFile("t.jsonl", jsonl_bytes([task("a")])), "name": "page-batch",
                "kind": "interfeedback", **fields})
        assert response.status_code == 302, response.content.decode()[:2000]
        import_job_run(job_id=Job.objects.latest("pk").pk)
        return Batch.objects.get(name="page-batch").open_to_all_annotators

    assert upload() is False  # a new batch: not open to all
    assert upload(open_to_all_annotators="yes") is True
    assert upload(open_to_all_annotators="") is True  # "as the batch has it"
    assert upload() is True
    assert upload(open_to_all_annotators="no") is False  # re-import, switched off
    assert upload(open_to_all_annotators="") is False


def test_the_form_again_from_a_job_shows_what_it_was_given(client, admin_user, django_capture_on_commit_callbacks):
    client.force_login(admin_user)
    with django_capture_on_commit_callbacks(execute=False):
        client.post("/imports/new/", {"file": SimpleUploadedFile("t.jsonl", jsonl_bytes([task("a")])),
                                      "name": "again", "kind": "interfeedback", "open_to_all_annotators": "no"})
    job = Job.objects.get()
    assert job.params["settings"] == {"open_to_all_annotators": False}
    form = client.get(f"/imports/new/?again={job.pk}").context["form"]
    assert form["open_to_all_annotators"].value() == "no"


def test_the_api_switches_it_off_and_keeps_it_when_left_out(api_client, admin_user, django_capture_on_commit_callbacks):
    api_client.force_authenticate(admin_user)

    def upload(**fields):
        with django_capture_on_commit_callbacks(execute=False):
            response = api_client.post("/api/imports/", {
                "file": SimpleUploadedFile("t.jsonl", jsonl_bytes([task("a")])), "name": "api-batch", **fields,
            }, format="multipart")
        assert response.status_code == 202, response.json()
        import_job_run(job_id=response.json()["job_id"])
        return Batch.objects.get(name="api-batch").open_to_all_annotators

    assert upload(open_to_all_annotators="true") is True
    assert upload() is True  # left out: the batch keeps it
    assert upload(open_to_all_annotators="false") is False
    assert upload() is False
