"""A model's health against a real local OpenAI-protocol server: rounds failing in a row open the circuit breaker
(later rounds fail at once, sending nothing, with a message for the annotator), an answered round resets the
count, and a periodic probe that answers closes the breaker; probes' latency and errors reach the page, the API
and the dashboard."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from annotate import health, queue_contract
from annotate.modelconfigs import probe
from annotate.models import ModelConfig, Round
from annotate.queue.services import assignment_next
from annotate.sessions.services import round_retry
from annotate.watch.selectors import batch_dashboard
from tests.annotate.helpers import run_pending_round
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def config(fake, settings):
    settings.MODEL_BREAKER_FAILURES = 3
    model = ModelConfigFactory(backend=ModelConfig.Backend.OPENAI, backend_settings={
        "base_url": fake.base_url, "model": fake.model, "max_retries": 0})
    cache.delete(health._FAILURES_KEY.format(model.pk))  # the count lives in the shared cache
    return model


@pytest.fixture
def batch(config, no_dispatch):
    return make_batch(models=[config], tasks=8)


def new_round(batch) -> Round:
    return run_pending_round(assignment_next(annotator=UserFactory(), batch=batch).session)


def test_failures_in_a_row_open_the_breaker_and_an_answering_probe_closes_it(config, batch, fake):
    fake.failures = [(503, {})] * 3
    for _ in range(3):
        assert new_round(batch).generation_status == Round.Generation.FAILED
    config.refresh_from_db()
    assert config.unavailable_since is not None
    assert config.unavailable_reason.startswith("3 rounds failed in a row; the latest: The model did not answer")

    sent = len(fake.requests)
    waiting = new_round(batch)
    assert waiting.generation_status == Round.Generation.FAILED
    assert waiting.error == health.UNAVAILABLE_MESSAGE  # what the annotator reads beside Retry
    assert len(fake.requests) == sent  # nothing sent to a model known to be down
    assert batch_dashboard(batch)["unavailable_models"][0]["model"] == config.label

    probe.model_probe_run(config_id=config.pk)  # the server answers again
    config.refresh_from_db()
    assert config.unavailable_since is None and config.unavailable_reason == ""
    assert config.probe_error == "" and config.probe_latency_ms is not None and config.probed_at is not None
    assert batch_dashboard(batch)["unavailable_models"] == []

    round_retry(session_id=waiting.session_id)
    assert run_pending_round(waiting.session).generation_status == Round.Generation.DONE


def test_an_answered_round_starts_the_count_again(config, batch, fake):
    fake.failures = [(503, {})] * 2
    new_round(batch), new_round(batch)
    assert new_round(batch).generation_status == Round.Generation.DONE
    fake.failures = [(503, {})] * 2
    new_round(batch), new_round(batch)
    config.refresh_from_db()
    assert config.unavailable_since is None


def test_simulated_models_have_no_breaker(settings, no_dispatch):
    settings.MODEL_BREAKER_FAILURES = 1
    simulated = ModelConfigFactory(backend=ModelConfig.Backend.SIMULATED, backend_settings={"fail": "permanent"})
    batch = make_batch(models=[simulated], tasks=2)
    new_round(batch)
    assert new_round(batch).error != health.UNAVAILABLE_MESSAGE
    simulated.refresh_from_db()
    assert simulated.unavailable_since is None


def test_a_failed_probe_is_shown_on_the_page_and_in_the_api(config, fake, client, api_client):
    fake.failures = [(503, {})]
    probe.model_probe_run(config_id=config.pk)
    config.refresh_from_db()
    assert "503" in config.probe_error and config.probe_latency_ms is None

    admin = UserFactory(role="admin")
    client.force_login(admin)
    page = client.get("/setup/models/").content.decode()
    assert "Probe failed" in page and "503" in page
    api_client.force_authenticate(admin)
    listed = {m["name"]: m for m in api_client.get("/api/models/").json()}
    shown = listed[config.name]["health"]
    assert shown["available"] is True and "503" in shown["probe_error"] and shown["probed_at"]


def test_beat_sends_one_probe_per_served_model_to_its_own_queue(config, monkeypatch):
    ModelConfigFactory(backend=ModelConfig.Backend.SIMULATED)  # nothing to probe
    ModelConfigFactory(backend=ModelConfig.Backend.OPENAI, is_active=False,
                       backend_settings={"base_url": "http://x/v1", "model": "m"})  # retired
    sent = []
    monkeypatch.setattr(queue_contract, "send_task", lambda name, *, args, **options: sent.append(
        (name, args, options["queue"], options["expires"])))
    assert probe.models_probe_dispatch() == 1
    assert sent == [(queue_contract.MODEL_PROBE, [config.pk], config.queue_name, 60)]
