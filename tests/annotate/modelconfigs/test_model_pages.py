"""The Models pages (admins): list and create, edit, retire, test; errors beside the fields they name."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from annotate.models import Job, ModelConfig, User
from tests.factories import ModelConfigFactory, UserFactory

pytestmark = pytest.mark.django_db

OPENAI = {"base_url": "http://vllm:8000/v1", "model": "qwen", "api_key_env": "VLLM_API_KEY"}


@pytest.fixture
def admin_client(db):
    client = Client()
    client.force_login(UserFactory(username="ada", role=User.Role.ADMIN))
    return client


def form(**values) -> dict:
    return {"name": "qwen2-vl", "display_name": "Qwen2-VL 7B", "backend": "openai",
            "backend_settings": json.dumps(OPENAI), "generation": "{}", "queue": "", "soft_time_limit": 300,
            "time_limit": 360} | values


def test_create_then_edit(admin_client):
    page = admin_client.get("/setup/models/")
    assert page.status_code == 200 and b'<label for="id_backend_settings">' in page.content
    response = admin_client.post("/setup/models/", form())
    assert response.status_code == 302 and response["Location"] == "/setup/models/qwen2-vl/"
    config = ModelConfig.objects.get(name="qwen2-vl")
    assert config.label == "Qwen2-VL 7B" and config.backend_settings == OPENAI
    edit = admin_client.get("/setup/models/qwen2-vl/")
    assert b"VLLM_API_KEY" in edit.content and b"Test this model" in edit.content
    values = form(display_name="Qwen2-VL", generation='{"max_new_tokens": 64}')
    values.pop("name")
    assert admin_client.post("/setup/models/qwen2-vl/", values).status_code == 302
    config.refresh_from_db()
    assert (config.display_name, config.generation) == ("Qwen2-VL", {"max_new_tokens": 64})
    assert b"Qwen2-VL" in admin_client.get("/setup/models/").content


@pytest.mark.parametrize(("values", "shown"), [
    ({"backend_settings": json.dumps(OPENAI | {"api_key_env": "sk-proj-1234567890abcdefXYZ"})},
     b"api_key_env: looks like an API key"),
    ({"backend_settings": "{not json"}, b"Enter a valid JSON."),
    ({"name": "Qwen 2"}, b"must be 1-64 lower-case"),
    ({"time_limit": 100}, b"must be above soft_time_limit (300 s)"),
])
def test_bad_input_is_shown_beside_its_field(admin_client, values, shown):
    response = admin_client.post("/setup/models/", form(**values))
    assert response.status_code == 400
    assert shown in response.content.replace(b"&#x27;", b"'"), response.content.decode()[:3000]
    assert not ModelConfig.objects.exists()


def test_retire_restore_and_test(admin_client, monkeypatch):
    ModelConfigFactory(name="sim")
    assert admin_client.get("/setup/models/sim/retire/").status_code == 405
    admin_client.post("/setup/models/sim/retire/")
    assert not ModelConfig.objects.get(name="sim").is_active
    admin_client.post("/setup/models/sim/restore/")
    assert ModelConfig.objects.get(name="sim").is_active
    monkeypatch.setattr("annotate.queue_contract.send_task", lambda *a, **k: None)
    response = admin_client.post("/setup/models/sim/test/")
    job = Job.objects.get(kind=Job.Kind.MODEL_CHECK)
    assert response["Location"] == f"/setup/models/checks/{job.pk}/"
    check = admin_client.get(response["Location"])
    assert b'http-equiv="refresh"' in check.content and b"Queued" in check.content
    assert admin_client.get("/setup/models/nope/").status_code == 404


@pytest.mark.parametrize("persona", ["researcher", "annotator"])
def test_models_pages_are_for_admins(persona, request):
    ModelConfigFactory(name="sim")
    client = Client()
    client.force_login(request.getfixturevalue(persona))
    assert client.get("/setup/models/").status_code == 403
    assert client.post("/setup/models/", form()).status_code == 403
    assert client.post("/setup/models/sim/retire/").status_code == 403
    assert ModelConfig.objects.get(name="sim").is_active and ModelConfig.objects.count() == 1
