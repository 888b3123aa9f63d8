"""End to end: an upload through the API is imported by a real Celery worker (real Redis, no eager mode)."""

from __future__ import annotations

import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.models import Batch
from tests.annotate.imports.files import png, task, write_zip

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_uploaded_zip_is_imported_by_the_worker(api_client, admin_user, celery_worker_process, tmp_path):
    path = write_zip(tmp_path / "b.zip", [task("a", images=["images/p.png"]), task("b")], {"images/p.png": png()})
    api_client.force_authenticate(admin_user)

    response = api_client.post("/api/imports/", {"file": SimpleUploadedFile("b.zip", path.read_bytes()),
                                                 "name": "worker-batch"}, format="multipart")
    assert response.status_code == 202, response.json()

    deadline, body = time.monotonic() + 60, {}
    while time.monotonic() < deadline:
        body = api_client.get(response.json()["url"]).json()
        if body["done"]:
            break
        time.sleep(0.2)
    assert body.get("status") == "succeeded", body
    assert body["report"]["counts"]["created"] == 2 and body["progress"] == 1.0
    assert Batch.objects.get(name="worker-batch").task_count == 2
