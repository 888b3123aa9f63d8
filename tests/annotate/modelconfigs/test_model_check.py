"""The admin's "Test this model": the service queues a Job on the model's queue; the task (called directly, as a worker
would) sends one short prompt with an image through models_runtime and stores the answer or the error."""

from __future__ import annotations

import io
import re

import pytest
import torch
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotate.modelconfigs.check import CHECK_MAX_NEW_TOKENS, model_config_check
from annotate.modelconfigs.tasks import model_config_check_job
from annotate.models import Job, ModelConfig, User
from tests.factories import ModelConfigFactory, UserFactory
from tests.fake_openai_server import serving

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("release_backends")]


@pytest.fixture
def admin_role(db):
    return UserFactory(username="ada", role=User.Role.ADMIN)


def run_check(config: ModelConfig, **kwargs) -> Job:
    """Queue the check as the admin would, then run the task function as the worker would."""
    job = model_config_check(config=config, **kwargs)
    assert job.status == Job.Status.QUEUED and job.kind == Job.Kind.MODEL_CHECK
    model_config_check_job(job.id)
    job.refresh_from_db()
    return job


def test_dispatch_goes_to_the_model_queue_with_its_time_limits(monkeypatch, django_capture_on_commit_callbacks):
    config = ModelConfigFactory(name="gpu-model", queue="model.gpu-model", soft_time_limit=40, time_limit=50)
    sent = []
    monkeypatch.setattr("annotate.queue_contract.send_task", lambda name, **kwargs: sent.append(kwargs))
    with django_capture_on_commit_callbacks(execute=True):
        job = model_config_check(config=config)
    assert sent == [{"args": [job.id], "queue": "model.gpu-model", "soft_time_limit": 40, "time_limit": 50,
                     "retry": True, "retry_policy": {"max_retries": 2}}]
    assert job.params["queue"] == "model.gpu-model" and "model.gpu-model" in job.message


def test_broker_down_fails_the_job_instead_of_running_it_here(monkeypatch, django_capture_on_commit_callbacks):
    def refuse(name, **kwargs):
        raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr("annotate.queue_contract.send_task", refuse)
    with django_capture_on_commit_callbacks(execute=True):
        job = model_config_check(config=ModelConfigFactory())
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "Could not reach the task queue" in job.error


def test_simulated_backend_answers(admin_role):
    job = run_check(ModelConfigFactory(name="sim-check"), created_by=admin_role)
    assert job.status == Job.Status.SUCCEEDED, job.error
    report = job.report
    assert report["answer"].strip() and report["simulated"] is True and report["with_image"] is True
    assert report["latency_ms"] >= 0 and report["time_to_first_token_ms"] is not None
    assert report["completion_tokens"] > 0
    assert job.started_at and job.finished_at and job.progress == 1.0 and job.created_by == admin_role


def test_a_finished_job_is_not_run_twice():
    job = run_check(ModelConfigFactory())
    finished_at = job.finished_at
    model_config_check_job(job.id)  # a duplicate delivery
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.finished_at == finished_at


def test_tiny_transformers_model_with_an_image(tiny_llava_path):
    config = ModelConfigFactory(name="tiny-llava", backend=ModelConfig.Backend.TRANSFORMERS,
                                backend_settings={"path": tiny_llava_path}, generation={"max_new_tokens": 500})
    job = run_check(config)
    assert job.status == Job.Status.SUCCEEDED, job.error
    report = job.report
    expected = ("cuda", "bfloat16") if torch.cuda.is_available() else ("cpu", "float32")
    assert (report["device"], report["dtype"]) == expected
    assert isinstance(report["answer"], str)
    assert 0 < report["completion_tokens"] <= CHECK_MAX_NEW_TOKENS  # the check caps a long generation setting
    assert report["prompt_tokens"] > 0 and report["latency_ms"] >= report["time_to_first_token_ms"]


def test_text_only_checkpoint_fails_clearly_with_an_image_and_passes_without(tiny_causal_path):
    config = ModelConfigFactory(name="tiny-causal", backend=ModelConfig.Backend.TRANSFORMERS,
                                backend_settings={"path": tiny_causal_path})
    job = run_check(config)
    assert job.status == Job.Status.FAILED
    assert job.error.startswith("PermanentModelError:") and "text-only" in job.error
    job = run_check(config, with_image=False)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.report["with_image"] is False


def test_openai_backend_against_a_local_server():
    with serving() as fake:
        config = ModelConfigFactory(name="served", backend=ModelConfig.Backend.OPENAI,
                                    backend_settings={"base_url": fake.base_url, "model": fake.model})
        job = run_check(config)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.report["answer"] == "".join(fake.chunks)
    assert (job.report["prompt_tokens"], job.report["completion_tokens"]) == (17, 5)
    body = fake.requests[0]["body"]
    assert body["stream"] is True and body["max_tokens"] == CHECK_MAX_NEW_TOKENS
    image_part, text_part = body["messages"][0]["content"]
    assert image_part["image_url"]["url"].startswith("data:image/png;base64,")
    assert "colour" in text_part["text"]


def test_openai_bad_key_is_stored_as_the_error(monkeypatch):
    monkeypatch.setenv("CHECK_TEST_API_KEY", "sk-wrong")
    with serving() as fake:
        fake.api_key = "sk-right"
        config = ModelConfigFactory(backend=ModelConfig.Backend.OPENAI, backend_settings={
            "base_url": fake.base_url, "model": fake.model, "api_key_env": "CHECK_TEST_API_KEY"})
        job = run_check(config)
    assert job.status == Job.Status.FAILED
    assert job.error.startswith("PermanentModelError:") and "401" in job.error and "CHECK_TEST_API_KEY" in job.error


def test_openai_server_down_is_a_transient_error_not_retried_by_the_check():
    with serving() as fake:
        fake.failures = [(503, {})] * 3
        config = ModelConfigFactory(backend=ModelConfig.Backend.OPENAI, backend_settings={
            "base_url": fake.base_url, "model": fake.model, "max_retries": 1, "backoff_base": 0})
        job = run_check(config)
    assert job.status == Job.Status.FAILED and job.error.startswith("TransientModelError:")
    assert len(fake.requests) == 2  # the backend's own retries only


@pytest.mark.parametrize("respond_as", ["sse", "json"])
def test_an_empty_answer_fails_the_check(respond_as):
    with serving() as fake:
        fake.respond_as, fake.chunks = respond_as, []
        config = ModelConfigFactory(backend=ModelConfig.Backend.OPENAI, backend_settings={
            "base_url": fake.base_url, "model": fake.model})
        job = run_check(config)
        ModelConfigFactory(name="empty-cli", backend=ModelConfig.Backend.OPENAI, backend_settings={
            "base_url": fake.base_url, "model": fake.model})
        with pytest.raises(CommandError, match="EmptyAnswerError: .*gave an empty answer"):
            call_command("check_model", "empty-cli", stdout=io.StringIO())
    assert job.status == Job.Status.FAILED and job.report == {}
    assert job.error.startswith("EmptyAnswerError:") and "empty answer" in job.error


def test_permanent_error_fails_the_job_with_its_message():
    job = run_check(ModelConfigFactory(backend_settings={"fail": "permanent"}))
    assert job.status == Job.Status.FAILED and job.message == "Failed"
    assert job.error.startswith("PermanentModelError:") and job.finished_at is not None
    assert job.report == {}


def test_bad_generation_setting_is_reported():
    job = run_check(ModelConfigFactory(generation={"beams": 4}))
    assert job.status == Job.Status.FAILED and "unknown generation setting(s): beams" in job.error


def test_deleted_config_fails_the_job():
    config = ModelConfigFactory()
    job = model_config_check(config=config)
    config.delete()
    model_config_check_job(job.id)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "no longer exists" in job.error


# --- API --------------------------------------------------------------------------------------------------


def test_model_list_for_researchers_not_annotators(api_client, annotator, researcher, django_assert_max_num_queries):
    ModelConfigFactory(name="a-model")
    ModelConfigFactory(name="b-model", is_active=False)
    api_client.force_authenticate(annotator)
    assert api_client.get("/api/models/").status_code == 403
    api_client.force_authenticate(researcher)
    with django_assert_max_num_queries(2):
        response = api_client.get("/api/models/")
    assert response.status_code == 200
    assert [m["name"] for m in response.json()] == ["a-model", "b-model"]
    assert response.json()[0]["queue"] == "model.simulated" and response.json()[0]["simulated"] is True
    assert [m["name"] for m in api_client.get("/api/models/?active=1").json()] == ["a-model"]


def test_check_api_is_for_admins(api_client, annotator, researcher, admin_role):
    ModelConfigFactory(name="sim-api")
    for user in (annotator, researcher):
        api_client.force_authenticate(user)
        response = api_client.post("/api/models/sim-api/check/")
        assert response.status_code == 403 and "Only admins" in response.json()["detail"]
    assert not Job.objects.exists()


def test_check_api_unknown_model_and_bad_input(api_client, admin_role):
    api_client.force_authenticate(admin_role)
    response = api_client.post("/api/models/no-such-model/check/")
    assert response.status_code == 404 and "no-such-model" in response.json()["detail"]
    ModelConfigFactory(name="sim-api")
    response = api_client.post("/api/models/sim-api/check/", {"image": "perhaps"}, format="json")
    assert response.status_code == 400 and "image" in response.json()


def test_check_api_queues_then_job_api_shows_the_result(api_client, admin_role, researcher):
    ModelConfigFactory(name="sim-api")
    api_client.force_authenticate(admin_role)
    response = api_client.post("/api/models/sim-api/check/", {"image": False}, format="json")
    assert response.status_code == 202
    payload = response.json()
    assert payload["status"] == "queued" and payload["done"] is False and payload["kind"] == "model_check"
    assert response["Location"] == reverse("api-job", args=[payload["id"]]) == payload["url"]
    assert payload["params"]["with_image"] is False

    model_config_check_job(payload["id"])  # the worker's part
    job = api_client.get(payload["url"]).json()
    assert job["done"] is True and job["status"] == "succeeded" and job["report"]["answer"]

    api_client.force_authenticate(researcher)  # not theirs, no batch
    assert api_client.get(payload["url"]).status_code == 404


def test_job_api_access(api_client, annotator, researcher, admin_role):
    job = Job.objects.create(kind=Job.Kind.MODEL_CHECK, created_by=researcher, params={"queue": "model.x"})
    api_client.force_authenticate(annotator)
    assert api_client.get(f"/api/jobs/{job.id}/").status_code == 403
    api_client.force_authenticate(researcher)
    assert api_client.get(f"/api/jobs/{job.id}/").status_code == 200
    assert api_client.get("/api/jobs/999999/").status_code == 404
    api_client.force_authenticate(admin_role)
    assert api_client.get(f"/api/jobs/{job.id}/").json()["hint"] == ""


def test_schema_documents_the_endpoints(api_client, admin_role):
    api_client.force_authenticate(admin_role)
    schema = api_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert {"/api/models/", "/api/models/{name}/check/", "/api/jobs/{job_id}/"} <= set(schema["paths"])


# --- admin and command ------------------------------------------------------------------------------------


def test_admin_action_queues_and_renders_the_result_page(admin_client):
    config = ModelConfigFactory(name="sim-admin")
    response = admin_client.post(reverse("admin:annotate_modelconfig_changelist"),
                                 {"action": "test_model", "_selected_action": [config.pk]})
    job = Job.objects.get(kind=Job.Kind.MODEL_CHECK)
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:annotate_modelconfig_check_result", args=[job.pk])

    page = admin_client.get(response["Location"])
    assert page.status_code == 200
    assert b'data-status="queued"' in page.content and b'http-equiv="refresh"' in page.content

    model_config_check_job(job.id)
    page = admin_client.get(response["Location"])
    job.refresh_from_db()
    assert b'data-status="succeeded"' in page.content and b'http-equiv="refresh"' not in page.content
    assert job.report["answer"].split()[0].encode() in page.content
    assert b"Latency" in page.content and b"Simulated backend" in page.content


def test_admin_action_on_several_configs_links_each_check(admin_client):
    configs = [ModelConfigFactory(), ModelConfigFactory()]
    response = admin_client.post(reverse("admin:annotate_modelconfig_changelist"),
                                 {"action": "test_model", "_selected_action": [c.pk for c in configs]}, follow=True)
    assert Job.objects.filter(kind=Job.Kind.MODEL_CHECK).count() == 2
    assert b"Queued 2 model checks" in response.content


def test_change_page_button_posts_the_check_and_shows_errors(admin_client):
    config = ModelConfigFactory(name="broken", backend_settings={"fail": "permanent"})
    change = admin_client.get(reverse("admin:annotate_modelconfig_change", args=[config.pk]))
    check_url = reverse("admin:annotate_modelconfig_check", args=[config.pk])
    assert b"Test this model" in change.content and check_url.encode() in change.content

    assert admin_client.get(check_url).status_code == 302  # GET never queues
    assert not Job.objects.exists()
    response = admin_client.post(check_url)
    job = Job.objects.get()
    assert response["Location"] == reverse("admin:annotate_modelconfig_check_result", args=[job.pk])
    model_config_check_job(job.id)
    page = admin_client.get(response["Location"])
    assert b"The check failed" in page.content and b"PermanentModelError" in page.content


def test_result_page_needs_admin_access(client, annotator):
    job = Job.objects.create(kind=Job.Kind.MODEL_CHECK, params={})
    client.force_login(annotator)
    response = client.get(reverse("admin:annotate_modelconfig_check_result", args=[job.pk]))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_check_model_command_runs_in_process():
    ModelConfigFactory(name="sim-cli")
    out = io.StringIO()
    call_command("check_model", "sim-cli", stdout=out)
    text = out.getvalue()
    assert "answer:" in text and "latency:" in text and "time to first token:" in text and "OK" in text
    assert not Job.objects.exists()  # no job, no broker: it ran here


def test_check_model_command_device_and_errors(tiny_llava_path):
    ModelConfigFactory(name="tiny-cli", backend=ModelConfig.Backend.TRANSFORMERS, backend_settings={"path": tiny_llava_path})
    out = io.StringIO()
    call_command("check_model", "tiny-cli", stdout=out)
    if torch.cuda.is_available():
        assert "device / dtype: cuda / bfloat16" in out.getvalue() and "compiled decoding: on: " in out.getvalue()
    else:
        assert "device / dtype: cpu / float32" in out.getvalue() and "compiled decoding: off\n" in out.getvalue()
    with pytest.raises(CommandError, match="No model config named 'nope'"):
        call_command("check_model", "nope")
    ModelConfigFactory(name="broken-cli", backend_settings={"fail": "permanent"})
    with pytest.raises(CommandError, match="PermanentModelError"):
        call_command("check_model", "broken-cli")


def test_the_check_shows_the_warm_up_of_compiled_decoding(tiny_llava_path, admin_client, compile_on_cpu):
    """Compiled on the CPU (as tests may) with torch.compile's "eager" backend: one batch size at one cache length."""
    settings = {"path": tiny_llava_path, "device": "cpu", "max_batch_size": 1, "compiled_decoding": True,
                "compile_backend": "eager", "compile_cache_lengths": [256]}
    config = ModelConfigFactory(name="tiny-compiled", backend=ModelConfig.Backend.TRANSFORMERS,
                                backend_settings=settings)
    out = io.StringIO()

    call_command("check_model", "tiny-compiled", stdout=out)
    job = run_check(config)  # the same warm backend in this process

    assert re.search(r"compiled decoding: on: 1 shape compiled in \d+\.\d s\n", out.getvalue()), out.getvalue()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.report["compiled_decoding"].startswith("on: 1 shape compiled in ")
    assert job.report["warm_up_ms"] > 0
    page = admin_client.get(reverse("admin:annotate_modelconfig_check_result", args=[job.pk]))
    assert f"<th>Compiled decoding</th><td>{job.report['compiled_decoding']}</td>".encode() in page.content
