"""POST/PATCH /api/models/: admins write, researchers read, others 403; 400 bodies name the field."""

from __future__ import annotations

import pytest

from annotate.models import ModelConfig, User
from tests.factories import ModelConfigFactory, UserFactory

pytestmark = pytest.mark.django_db

NEW = {"name": "gpt-4o", "display_name": "GPT-4o", "backend": "openai",
       "backend_settings": {"base_url": "https://api.openai.com/v1", "model": "gpt-4o",
                            "api_key_env": "OPENAI_API_KEY"},
       "generation": {"max_new_tokens": 256}}


@pytest.fixture
def admin_user(db):
    return UserFactory(username="ada", role=User.Role.ADMIN)


def test_admin_creates_and_researcher_reads(api_client, admin_user, researcher):
    api_client.force_authenticate(admin_user)
    response = api_client.post("/api/models/", NEW, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["name"], body["display_name"], body["label"], body["queue"]) == ("gpt-4o", "GPT-4o", "GPT-4o",
                                                                                 "model.openai")
    assert response["Location"] == "/api/models/gpt-4o/"
    api_client.force_authenticate(researcher)
    assert api_client.get("/api/models/gpt-4o/").json()["backend_settings"]["api_key_env"] == "OPENAI_API_KEY"
    assert [m["display_name"] for m in api_client.get("/api/models/").json()] == ["GPT-4o"]


@pytest.mark.parametrize("persona", ["researcher", "annotator"])
def test_only_admins_write(api_client, persona, request):
    user = request.getfixturevalue(persona)
    config = ModelConfigFactory(name="sim")
    api_client.force_authenticate(user)
    assert api_client.post("/api/models/", NEW, format="json").status_code == 403
    assert api_client.patch("/api/models/sim/", {"display_name": "x"}, format="json").status_code == 403
    assert api_client.post("/api/models/sim/retire/").status_code == 403
    config.refresh_from_db()
    assert (config.display_name, config.is_active, ModelConfig.objects.count()) == ("", True, 1)


def test_annotators_cannot_read_and_anonymous_is_refused(api_client, annotator):
    ModelConfigFactory(name="sim")
    assert api_client.get("/api/models/sim/").status_code in (401, 403)
    api_client.force_authenticate(annotator)
    assert api_client.get("/api/models/sim/").status_code == 403


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"backend_settings": {"base_url": "https://x/v1", "model": "m", "api_key_env": "sk-abc123"}},
     "backend_settings.api_key_env", "looks like an API key"),
    ({"backend_settings": {"base_url": "https://x/v1"}}, "backend_settings.model", "required"),
    ({"name": "Has Space"}, "name", "lower-case"),
    ({"backend": "gemini"}, "backend", "not a valid choice"),
    ({"backend_settings": "VLLM"}, "backend_settings", "dictionary"),
    ({"generation": {"top_k": 3}}, "generation.top_k", "unknown generation setting"),
])
def test_bad_input_is_400_naming_the_field(api_client, admin_user, change, field, words):
    api_client.force_authenticate(admin_user)
    response = api_client.post("/api/models/", NEW | change, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "invalid" and field in body, body
    assert words in body[field][0] if isinstance(body[field], list) else words in str(body[field])
    assert body["detail"].startswith(field)
    assert not ModelConfig.objects.exists()


def test_patch_edits_and_retires(api_client, admin_user):
    ModelConfigFactory(name="sim")
    api_client.force_authenticate(admin_user)
    response = api_client.patch("/api/models/sim/", {"display_name": "Demo student",
                                                     "generation": {"seed": 1}}, format="json")
    assert response.status_code == 200 and response.json()["label"] == "Demo student (simulated)"
    bad = api_client.patch("/api/models/sim/", {"display_name": "ok", "soft_time_limit": 400}, format="json")
    assert bad.status_code == 400 and "time_limit" in bad.json()
    assert ModelConfig.objects.get(name="sim").display_name == "Demo student"
    assert api_client.patch("/api/models/sim/", {"is_active": False}, format="json").json()["is_active"] is False
    assert api_client.patch("/api/models/sim/", {"is_active": True}, format="json").json()["is_active"] is True
    assert api_client.post("/api/models/sim/retire/").json()["is_active"] is False
    assert ModelConfig.objects.filter(name="sim", is_active=False).exists()
    assert api_client.patch("/api/models/nope/", {"display_name": "x"}, format="json").status_code == 404
    assert api_client.post("/api/models/nope/retire/").status_code == 404


def test_schema_lists_the_new_operations(api_client, admin_user):
    api_client.force_authenticate(admin_user)
    schema = api_client.get("/api/schema/?format=json").json()
    assert {"get", "post"} <= set(schema["paths"]["/api/models/"])
    assert {"get", "patch"} <= set(schema["paths"]["/api/models/{name}/"])
    assert {"get", "post", "delete"} <= set(schema["paths"]["/api/token/"])
    assert {"get", "post"} <= set(schema["paths"]["/api/users/"])
