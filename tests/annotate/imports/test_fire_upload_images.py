"""A FIRE batch from the web: the JSON and its images zip as two files (or one zip holding both), and errors that
name the uploaded files and say what to upload, never where the server keeps them."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.imports.jobs import import_job_run
from annotate.models import Batch, Conversation

pytestmark = pytest.mark.django_db
URL = "/api/imports/"


def sample_json() -> bytes:
    from tests.annotate.rating.fire.fire_data import sample_records

    return json.dumps(sample_records()).encode()


def images_zip() -> bytes:
    from tests.annotate.rating.fire.fire_data import write_images_dir

    out = io.BytesIO()
    import tempfile

    with tempfile.TemporaryDirectory() as folder, zipfile.ZipFile(out, "w") as archive:
        for image in write_images_dir(Path(folder) / "images").iterdir():
            archive.write(image, f"images/{image.name}")
    return out.getvalue()


def upload(api_client, **files):
    data = {"name": "fire-web", "kind": "fire", "file": SimpleUploadedFile("fire.json", sample_json())}
    data.update(files)
    response = api_client.post(URL, data, format="multipart")
    assert response.status_code == 202, response.json()
    job_id = response.json()["job_id"]
    import_job_run(job_id=job_id)
    return api_client.get(f"{URL}{job_id}/").json()


def test_json_and_images_zip_as_two_files(api_client, admin_user, media_root):
    api_client.force_authenticate(admin_user)
    body = upload(api_client, images=SimpleUploadedFile("fire-images.zip", images_zip()))
    assert body["status"] == "succeeded", body["report"]
    batch = Batch.objects.get(name="fire-web")
    assert Conversation.objects.filter(batch=batch).count() == 2


def test_json_without_its_images_says_what_to_upload_and_no_server_path(api_client, admin_user, media_root):
    api_client.force_authenticate(admin_user)
    body = upload(api_client)
    assert body["status"] == "failed"
    texts = [problem["text"] for problem in body["report"]["problems"]]
    assert any("upload the images zip in the Images field" in text for text in texts), texts
    assert str(media_root) not in json.dumps(body) and "/uploads/" not in json.dumps(body)
    assert not Batch.objects.filter(name="fire-web").exists()


def test_images_must_be_a_zip_and_only_for_fire_style_batches(api_client, admin_user):
    api_client.force_authenticate(admin_user)
    response = api_client.post(URL, {"name": "x", "kind": "fire", "file": SimpleUploadedFile("fire.json", b"[]"),
                                      "images": SimpleUploadedFile("pics.tar", b"not a zip")}, format="multipart")
    assert response.status_code == 400 and "'pics.tar' is not a zip" in response.json()["detail"]
    response = api_client.post(URL, {"name": "y", "kind": "interfeedback",
                                      "file": SimpleUploadedFile("tasks.jsonl", b"{}"),
                                      "images": SimpleUploadedFile("pics.zip", images_zip())}, format="multipart")
    assert response.status_code == 400 and "same zip as the records" in response.json()["detail"]
