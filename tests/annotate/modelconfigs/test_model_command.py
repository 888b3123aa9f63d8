"""manage.py model add|edit|list|check|retire: the same services as the page and the API."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from annotate.modelconfigs.tasks import model_config_check_job
from annotate.models import Job, ModelConfig
from tests.factories import ModelConfigFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("release_backends")]


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_add_with_settings_and_generation():
    out = run("model", "add", "gpt-4o", "--backend", "openai", "--display-name", "GPT-4o",
              "--setting", "base_url=https://api.openai.com/v1", "--setting", "model=gpt-4o",
              "--setting", "api_key_env=OPENAI_API_KEY", "--setting", "max_retries=2",
              "--generation", "max_new_tokens=512", "--generation", "temperature=0.2")
    assert "Created gpt-4o (GPT-4o, openai, queue model.openai)" in out
    config = ModelConfig.objects.get(name="gpt-4o")
    assert config.backend_settings == {"base_url": "https://api.openai.com/v1", "model": "gpt-4o",
                                       "api_key_env": "OPENAI_API_KEY", "max_retries": 2}
    assert config.generation == {"max_new_tokens": 512, "temperature": 0.2}


def test_add_refuses_a_key_and_names_every_problem():
    with pytest.raises(CommandError) as caught:
        run("model", "add", "GPT", "--backend", "openai", "--setting", "api_key_env=sk-live-0123456789abcdef",
            "--setting", "base_url=https://api.openai.com/v1")
    message = str(caught.value)
    assert "name: must be 1-64 lower-case" in message
    assert "backend_settings.api_key_env: looks like an API key" in message
    assert "backend_settings.model: required for the openai backend" in message
    assert not ModelConfig.objects.exists()


@pytest.mark.parametrize(("args", "words"), [
    (["--setting", "base_url"], "write KEY=VALUE"),
    (["--settings-json", "{bad"], "--settings-json: not valid JSON"),
    (["--settings-json", "[1]"], "must be a JSON object"),
])
def test_bad_options(args, words):
    with pytest.raises(CommandError, match=words):
        run("model", "add", "m", "--backend", "openai", *args)


def test_edit_list_retire():
    ModelConfigFactory(name="sim-a", display_name="Student A")
    assert "Saved sim-a: display_name, generation" in run(
        "model", "edit", "sim-a", "--display-name", "Demo A", "--generation", "seed=3")
    assert ModelConfig.objects.get(name="sim-a").generation == {"seed": 3}
    assert "Demo A (simulated)" in run("model", "list")
    with pytest.raises(CommandError, match="Nothing to change"):
        run("model", "edit", "sim-a")
    assert "Retired sim-a" in run("model", "retire", "sim-a")
    assert "sim-a" not in run("model", "list") and "retired" in run("model", "list", "--all")
    with pytest.raises(CommandError, match="No model config named 'nope'"):
        run("model", "retire", "nope")


def test_check_queues_on_the_model_queue_and_reports(monkeypatch):
    ModelConfigFactory(name="sim-check")
    # The broker is a stand-in that runs the worker's task function as soon as the job is queued.
    monkeypatch.setattr("annotate.queue_contract.send_task",
                        lambda name, args, **kwargs: model_config_check_job(*args))
    from django.db import transaction

    monkeypatch.setattr(transaction, "on_commit", lambda callback, **kwargs: callback())
    out = run("model", "check", "sim-check", "--wait", "5")
    assert "Queued check #" in out and "latency:" in out and out.rstrip().endswith("OK")
    assert Job.objects.get().status == Job.Status.SUCCEEDED


def test_check_without_a_worker_says_so(monkeypatch):
    ModelConfigFactory(name="sim-idle", queue="model.idle")
    monkeypatch.setattr("annotate.queue_contract.send_task", lambda *a, **k: None)
    with pytest.raises(CommandError, match="No answer after 0.5 s .*model.idle.*check_model sim-idle"):
        run("model", "check", "sim-idle", "--wait", "0.5")
