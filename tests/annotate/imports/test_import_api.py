"""POST /api/imports/ (multipart upload -> 202 + job) and GET /api/imports/<id>/ (status, progress, report)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token

from annotate.imports.jobs import import_job_run
from annotate.models import Batch, Job
from tests.annotate.imports.files import jsonl_bytes, task
from tests.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db
URL = "/api/imports/"


def _upload(name="tasks.jsonl", data=None):
    return SimpleUploadedFile(name, data if data is not None else jsonl_bytes([task("a"), task("b")]))


def test_happy_path_upload_run_and_status(api_client, admin_user, django_capture_on_commit_callbacks, media_root):
    ModelConfigFactory(name="m1")
    api_client.force_authenticate(admin_user)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = api_client.post(URL, {"file": _upload(), "name": "api-batch", "models": "m1", "overlap": 2},
                                   format="multipart")

    assert response.status_code == 202, response.json()
    job_id = response.json()["job_id"]
    assert response.json()["url"] == f"/api/imports/{job_id}/" and len(callbacks) == 1
    job = Job.objects.get(pk=job_id)
    assert job.status == Job.Status.QUEUED and job.params["settings"] == {"models": "m1", "overlap": 2}
    assert job.params["path"].startswith(str(media_root / "uploads"))

    queued = api_client.get(f"{URL}{job_id}/").json()
    assert queued["status"] == "queued" and queued["done"] is False

    import_job_run(job_id=job_id)  # what the Celery task does in the worker

    body = api_client.get(f"{URL}{job_id}/").json()
    assert body["status"] == "succeeded" and body["progress"] == 1.0 and body["done"] is True
    assert body["report"]["counts"]["created"] == 2 and body["batch"] == "api-batch"
    assert body["report"]["status"] == "imported"
    assert Batch.objects.get(name="api-batch").overlap == 2
    assert not (media_root / "uploads").exists() or not any((media_root / "uploads").iterdir())


def test_bad_file_gives_a_failed_job_with_the_report(api_client, admin_user):
    api_client.force_authenticate(admin_user)
    data = jsonl_bytes([task("a", answer="Z")])
    job_id = api_client.post(URL, {"file": _upload(data=data), "name": "bad"}, format="multipart").json()["job_id"]

    import_job_run(job_id=job_id)

    body = api_client.get(f"{URL}{job_id}/").json()
    assert body["status"] == "failed" and body["batch"] is None
    assert body["report"]["problems"][0]["text"].startswith("line 1, field answer: 'Z' is not an option letter")
    assert not Batch.objects.exists()


def test_token_auth(api_client, admin_user):
    token = Token.objects.create(user=admin_user)
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api_client.post(URL, {"file": _upload(), "name": "t"}, format="multipart").status_code == 202


@pytest.mark.parametrize("persona", ["outsider", "annotator", "researcher"])
def test_non_admins_get_403(api_client, admin_user, persona, request):
    api_client.force_authenticate(admin_user)
    job_id = api_client.post(URL, {"file": _upload(), "name": "x"}, format="multipart").json()["job_id"]
    api_client.force_authenticate(request.getfixturevalue(persona))

    post = api_client.post(URL, {"file": _upload(), "name": "y"}, format="multipart")
    get = api_client.get(f"{URL}{job_id}/")

    assert post.status_code == get.status_code == 403
    assert post.json()["detail"] == "Only admins may import batches."
    assert Job.objects.count() == 1


def test_anonymous_is_refused(api_client):
    assert api_client.get(f"{URL}1/").status_code in (401, 403)


def test_unknown_job_is_404(api_client, admin_user):
    api_client.force_authenticate(admin_user)
    response = api_client.get(f"{URL}999/")
    assert response.status_code == 404 and response.json()["detail"] == "Import job 999 does not exist."
    other = Job.objects.create(kind=Job.Kind.EXPORT)
    assert api_client.get(f"{URL}{other.pk}/").status_code == 404


@pytest.mark.parametrize(("payload", "message"), [
    ({"name": "n"}, "file"),
    ({"file": "upload", "name": ""}, "name"),
    ({"file": "upload", "name": "n", "kind": "xml"}, "kind"),
    ({"file": "upload", "name": "n", "overlap": 0}, "overlap"),
    ({"file": "upload", "name": "n", "models": "ghost"}, "field settings.models: unknown model(s) 'ghost'"),
    ({"file": "upload", "name": "n", "kind": "rows", "map": "questoin=q"}, "unknown field 'questoin'"),
    ({"file": "empty", "name": "n"}, "file"),
])
def test_bad_input_is_400_with_a_clear_message(api_client, admin_user, payload, message):
    api_client.force_authenticate(admin_user)
    payload = dict(payload)
    if payload.get("file") == "upload":
        payload["file"] = _upload()
    elif payload.get("file") == "empty":
        payload["file"] = _upload(data=b"")

    response = api_client.post(URL, payload, format="multipart")

    assert response.status_code == 400
    assert message in str(response.json())
    assert not Job.objects.exists()


def test_upload_options_cannot_point_at_server_paths(api_client, admin_user):
    api_client.force_authenticate(admin_user)
    job_id = api_client.post(URL, {"file": _upload(), "name": "n", "images_dir": "/etc"},
                             format="multipart").json()["job_id"]
    assert "images_dir" not in Job.objects.get(pk=job_id).params["options"]
