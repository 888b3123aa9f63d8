"""Bench and FIRE runs call models under the same guards as people's rounds: no request to a model whose breaker
is open, their failures and answers counted toward the breaker, and the model's quota shared, the lane's lease
kept while it waits for a slot."""

from __future__ import annotations

import threading

import pytest
from django.core.cache import cache

from annotate import health, quotas
from annotate.bench.lanes import call
from annotate.models import ModelConfig
from models_runtime import Message, TaskContext
from tests.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db

HELLO = (Message(role="user", content=("Say hello.",)),)
CONTEXT = TaskContext(task_id="bench-guards")


@pytest.fixture
def served(fake, settings):
    settings.MODEL_BREAKER_FAILURES = 2
    config = ModelConfigFactory(name="served", backend=ModelConfig.Backend.OPENAI, max_concurrent_requests=1,
                                backend_settings={"base_url": fake.base_url, "model": fake.model, "max_retries": 0})
    cache.delete(health._FAILURES_KEY.format(config.pk))
    quotas._redis().delete(quotas._SLOTS_KEY.format(config.pk))
    yield config
    quotas._redis().delete(quotas._SLOTS_KEY.format(config.pk))


def test_bench_failures_open_the_breaker_and_then_nothing_is_sent(served, fake):
    fake.failures = [(503, {})] * 2
    assert call(served, HELLO, CONTEXT).error and call(served, HELLO, CONTEXT).error
    served.refresh_from_db()
    assert served.unavailable_since is not None
    sent = len(fake.requests)
    assert call(served, HELLO, CONTEXT).error == health.UNAVAILABLE_MESSAGE
    assert len(fake.requests) == sent


def test_a_lane_waiting_for_the_models_quota_keeps_its_lease(served, fake):
    held = quotas.quota_take(served)  # a person's round holds the only slot for a moment
    threading.Timer(2.5, held.release).start()
    renewals = []
    reply = call(served, HELLO, CONTEXT, keep_alive=lambda: renewals.append(1))
    assert reply.error == "" and reply.text and len(fake.requests) == 1
    assert len(renewals) >= 2  # asked again about once a second, keeping the lease each time
