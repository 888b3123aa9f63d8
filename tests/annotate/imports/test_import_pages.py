"""The admin upload page and the job page."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.imports.jobs import import_job_run
from annotate.models import Job
from tests.annotate.imports.files import jsonl_bytes, task
from tests.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db


def test_form_upload_then_job_page_with_report(client, admin_user, django_capture_on_commit_callbacks):
    ModelConfigFactory(name="m1")
    client.force_login(admin_user)
    page = client.get("/imports/new/")
    assert page.status_code == 200 and b'enctype="multipart/form-data"' in page.content and b"m1" in page.content

    with django_capture_on_commit_callbacks(execute=False):
        response = client.post("/imports/new/", {
            "file": SimpleUploadedFile("t.jsonl", jsonl_bytes([task("a"), task("b", answer="Z")])),
            "name": "page-batch", "kind": "interfeedback", "overlap": 2,
        })

    job = Job.objects.get()
    assert response.status_code == 302 and response.url == f"/imports/{job.pk}/"
    waiting = client.get(response.url)
    assert waiting.status_code == 200 and b"Waiting for a worker" in waiting.content
    assert f"/api/imports/{job.pk}/".encode() in waiting.content  # the page polls the API

    import_job_run(job_id=job.pk)

    done = client.get(response.url).content.decode()
    assert "line 2, field answer: &#x27;Z&#x27; is not an option letter" in done
    listing = client.get("/imports/new/").content.decode()
    assert f"/imports/{job.pk}/" in listing


def test_form_errors_are_shown_with_400(client, admin_user):
    client.force_login(admin_user)

    response = client.post("/imports/new/", {
        "file": SimpleUploadedFile("t.csv", b"a,b\n1,2\n"), "name": "r", "kind": "rows", "column_map": "wrong=x",
    })

    assert response.status_code == 400
    assert "unknown field &#x27;wrong&#x27; in the column map" in response.content.decode()
    assert not Job.objects.exists()


@pytest.mark.parametrize("persona", ["outsider", "researcher"])
def test_non_admins_get_403(client, persona, request, admin_user):
    job = Job.objects.create(kind=Job.Kind.IMPORT, params={"name": "x"})
    client.force_login(request.getfixturevalue(persona))
    assert client.get("/imports/new/").status_code == 403
    assert client.get(f"/imports/{job.pk}/").status_code == 403


def test_anonymous_is_sent_to_login(client):
    response = client.get("/imports/new/")
    assert response.status_code == 302 and "/login/" in response.url


def test_unknown_job_page_is_404(client, admin_user):
    client.force_login(admin_user)
    assert client.get("/imports/12345/").status_code == 404
