"""What a model config may make the workers send, and what they keep of the answer.

- ``api_key_env`` names only a variable meant for a model's key (``..._API_KEY``), never one of the app's own
  settings: its value is sent as a Bearer token to ``base_url`` on every call, check and probe.
- What a model server answered (its body) never reaches a researcher: not the probe's error in the Models API, not
  a round's error, not a model check's.
- Link-local addresses (the cloud metadata services at 169.254.169.254 and their kin) are refused as model hosts,
  when a config is saved and, for configs saved before, when a call is made."""

from __future__ import annotations

import pytest

from annotate.modelconfigs import probe
from annotate.modelconfigs.tasks import model_config_check_job
from annotate.models import Job, ModelConfig, User
from annotate.queue.services import assignment_next
from tests.annotate.helpers import run_pending_round
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db

MARKER = "INTERNAL-PAGE-7f3a"  # what the server's body holds: it must never be shown


@pytest.fixture
def admin_client(api_client):
    api_client.force_authenticate(UserFactory(username="ada", role=User.Role.ADMIN))
    return api_client


def new_config(settings: dict) -> dict:
    return {"name": "served", "backend": "openai", "backend_settings": {"model": "m", **settings}}


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL",
                                  "AWS_SECRET_ACCESS_KEY", "HOME", "VLLM_KEY"])
@pytest.mark.parametrize("where", ["api_key_env", "endpoints"])
def test_api_key_env_must_name_a_variable_meant_for_a_model_key(admin_client, name, where):
    if where == "endpoints":
        settings, field = {"endpoints": [{"base_url": "http://vllm:8000/v1", "api_key_env": name}]}, \
            "backend_settings.endpoints"
    else:
        settings, field = {"base_url": "http://vllm:8000/v1", "api_key_env": name}, "backend_settings.api_key_env"
    response = admin_client.post("/api/models/", new_config(settings), format="json")
    assert response.status_code == 400, response.content
    assert field in response.json() and "_API_KEY" in response.json()["detail"]
    assert not ModelConfig.objects.exists()


def test_a_model_key_variable_is_accepted(admin_client):
    response = admin_client.post("/api/models/", new_config(
        {"base_url": "http://vllm:8000/v1", "api_key_env": "VLLM_API_KEY"}), format="json")
    assert response.status_code == 201, response.content


def test_a_config_saved_before_never_sends_the_apps_secret(fake, settings):
    config = ModelConfigFactory(backend=ModelConfig.Backend.OPENAI, backend_settings={
        "base_url": fake.base_url, "model": fake.model, "api_key_env": "SECRET_KEY", "max_retries": 0})
    probe.model_probe_run(config_id=config.pk)
    config.refresh_from_db()
    assert fake.requests == [] and "api_key_env" in config.probe_error and "_API_KEY" in config.probe_error


@pytest.mark.parametrize("answer", ["500 json", "401 json", "200 html"])
def test_what_the_server_answered_is_never_shown(fake, admin_client, monkeypatch, answer, no_dispatch):
    status, kind = answer.split()
    monkeypatch.setenv("SERVED_API_KEY", "sk-right")
    if kind == "html":
        fake.respond_as = "html"
    elif status == "401":
        fake.api_key = "sk-something-else"
    config = ModelConfigFactory(backend=ModelConfig.Backend.OPENAI, name="served", backend_settings={
        "base_url": fake.base_url, "model": fake.model, "api_key_env": "SERVED_API_KEY", "max_retries": 0})
    fake.failures = [(500, {})] * 3 if status == "500" else []
    fake.error_message = f"see {MARKER}"
    fake.page_text = f"<h1>{MARKER}</h1>"

    probe.model_probe_run(config_id=config.pk)
    listed = {m["name"]: m for m in admin_client.get("/api/models/").json()}
    shown = listed["served"]["health"]["probe_error"]
    assert shown and status in shown and MARKER not in shown

    rnd = run_pending_round(assignment_next(annotator=UserFactory(), batch=make_batch(models=[config])).session)
    assert rnd.generation_status == "failed" and status in rnd.error and MARKER not in rnd.error

    assert admin_client.post("/api/models/served/check/").status_code == 202
    job = Job.objects.get(kind=Job.Kind.MODEL_CHECK)
    model_config_check_job(job.id)  # as the worker would
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and status in job.error and MARKER not in job.error
    shown = admin_client.get(f"/api/jobs/{job.id}/").json()
    assert MARKER not in str(shown)


LINK_LOCAL = ["http://169.254.169.254/latest/meta-data", "http://[fe80::1]:8000/v1",
              "http://metadata.google.internal/v1", "http://[::ffff:169.254.169.254]/v1",
              "http://100.100.100.200/v1", "http://[fd00:ec2::254]/v1", "http://169.254.10.3:8000/v1"]


@pytest.mark.parametrize("url", LINK_LOCAL)
def test_link_local_and_metadata_hosts_are_refused(admin_client, url):
    response = admin_client.post("/api/models/", new_config({"base_url": url}), format="json")
    assert response.status_code == 400 and "backend_settings.base_url" in response.json(), response.content
    response = admin_client.post("/api/models/", new_config({"endpoints": [{"base_url": url}]}), format="json")
    assert response.status_code == 400 and "backend_settings.endpoints" in response.json(), response.content
    assert not ModelConfig.objects.exists()


def test_a_metadata_host_saved_before_is_never_called():
    config = ModelConfigFactory(backend=ModelConfig.Backend.OPENAI, backend_settings={
        "base_url": "http://169.254.169.254/v1", "model": "m", "max_retries": 0, "connect_timeout": 30})
    probe.model_probe_run(config_id=config.pk)
    config.refresh_from_db()
    assert config.probe_error.startswith("PermanentModelError") and "link-local" in config.probe_error


def test_no_setting_of_the_app_looks_like_a_model_key_variable():
    """The app's own settings are refused by name as well; none of them even matches the model key pattern."""
    from annotate.server.env import SETTINGS_NAMES
    from models_runtime.outbound import api_key_env_problem

    assert {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"} <= SETTINGS_NAMES
    assert [name for name in SETTINGS_NAMES if api_key_env_problem(name) is None] == []
