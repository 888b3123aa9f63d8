"""Per-model quotas across workers, in the real Redis: calls at once (threads racing for the last slot), calls and
tokens per minute, a killed worker's lease lapsing; and a round whose model is at its quota is handed back to the
queue unclaimed (no request, no model error, not failed), then answered once a slot is free."""

from __future__ import annotations

import threading
import time

import pytest
from limits import RateLimitItemPerMinute

from annotate import quotas
from annotate.errors import InvalidFields
from annotate.modelconfigs.services import model_create, model_update
from annotate.models import ModelConfig, Round, Session
from annotate.queue.services import assignment_next
from annotate.sessions import generation
from tests.annotate.helpers import run_pending_round
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


def forget(config: ModelConfig) -> None:
    """Quotas live in the shared Redis, beyond the test's transaction (ids can come back on SQLite)."""
    quotas._redis().delete(quotas._SLOTS_KEY.format(config.pk), quotas._PEOPLE_WAITING_KEY.format(config.pk))
    for scope, limit in (("model-rpm", config.requests_per_minute), ("model-tpm", config.tokens_per_minute)):
        if limit:
            quotas._limiter().clear(RateLimitItemPerMinute(limit), scope, str(config.pk))


@pytest.fixture
def limited():
    made = []

    def make(**limits) -> ModelConfig:
        config = ModelConfigFactory(**limits)
        forget(config)
        made.append(config)
        return config

    yield make
    for config in made:
        forget(config)


def test_no_more_calls_at_once_than_the_limit_even_when_threads_race(limited):
    config = limited(max_concurrent_requests=3)
    barrier, taken = threading.Barrier(8), []

    def take():
        barrier.wait()
        taken.append(quotas.quota_take(config))

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    slots = [t for t in taken if isinstance(t, quotas.Slot)]
    assert len(slots) == 3
    assert all(0 < t <= quotas.WAIT_WHEN_FULL_SECONDS for t in taken if not isinstance(t, quotas.Slot))
    slots[0].release()
    assert isinstance(quotas.quota_take(config), quotas.Slot)


def test_a_killed_workers_lease_lapses(limited):
    config = limited(max_concurrent_requests=1)
    # What a worker killed mid-call leaves: a lease whose time (the model's hard limit + 30 s) has passed.
    quotas._redis().zadd(quotas._SLOTS_KEY.format(config.pk), {"dead-worker": time.time() - 1})
    assert isinstance(quotas.quota_take(config), quotas.Slot)


def test_calls_per_minute(limited):
    config = limited(requests_per_minute=3)
    assert all(isinstance(quotas.quota_take(config), quotas.Slot) for _ in range(3))
    wait = quotas.quota_take(config)
    assert isinstance(wait, float) and 50 < wait <= 60


def test_tokens_per_minute_stop_new_calls_once_spent(limited):
    config = limited(tokens_per_minute=1000)
    quotas.quota_take(config).release(tokens=600)
    quotas.quota_take(config).release(tokens=600)  # started while 400 were left; now the minute is spent
    wait = quotas.quota_take(config)
    assert isinstance(wait, float) and 50 < wait <= 60


def test_a_model_without_quotas_touches_no_redis(monkeypatch):
    config = ModelConfigFactory()
    with monkeypatch.context() as patched:
        patched.setattr(quotas, "_redis", lambda: pytest.fail("no Redis call for a model without quotas"))
        patched.setattr(quotas, "_limiter", lambda: pytest.fail("no Redis call for a model without quotas"))
        quotas.quota_take(config).release(tokens=500)


def test_a_round_at_its_models_quota_waits_unclaimed_then_answers(limited, fake, no_dispatch):
    config = limited(max_concurrent_requests=1, backend=ModelConfig.Backend.OPENAI,
                     backend_settings={"base_url": fake.base_url, "model": fake.model})
    session = assignment_next(annotator=UserFactory(), batch=make_batch(models=[config])).session
    held = quotas.quota_take(config)  # another worker's call holds the only slot

    rnd = session.rounds.get()
    wait = generation.round_generate(round_id=rnd.id, claim_token="task-1")
    rnd.refresh_from_db()
    assert 0 < wait <= quotas.WAIT_WHEN_FULL_SECONDS
    assert (rnd.generation_status, rnd.attempts, rnd.error) == (Round.Generation.QUEUED, 0, "")
    assert fake.requests == []  # nothing sent, nothing counted as a model error

    held.release()
    rnd = run_pending_round(session)
    session.refresh_from_db()
    assert rnd.generation_status == Round.Generation.DONE and rnd.attempts == 1
    assert session.status != Session.Status.FAILED and len(fake.requests) == 1
    assert isinstance(quotas.quota_take(config), quotas.Slot)  # the round gave its slot back


def test_quotas_are_set_and_checked_like_other_fields():
    config = model_create(name="capped", backend="simulated", max_concurrent_requests=4, requests_per_minute=60,
                          tokens_per_minute=90_000)
    assert (config.max_concurrent_requests, config.requests_per_minute, config.tokens_per_minute) == (4, 60, 90_000)
    with pytest.raises(InvalidFields) as error:
        model_update(config=config, requests_per_minute=0)
    assert "requests_per_minute" in dict(error.value.problems)
    assert model_update(config=config, requests_per_minute=None).requests_per_minute is None


def test_people_come_first_a_run_takes_no_slot_while_a_person_waits(limited):
    config = limited(max_concurrent_requests=1)
    held = quotas.quota_take(config, person=False)  # a bench call holds the only slot
    assert isinstance(quotas.quota_take(config), float)  # a person's round waits for it...
    held.release()
    assert isinstance(quotas.quota_take(config, person=False), float)  # ...so the run does not take it back
    person = quotas.quota_take(config)
    assert isinstance(person, quotas.Slot)  # the person's round, asking again, gets it
    person.release()
    quotas._redis().delete(quotas._PEOPLE_WAITING_KEY.format(config.pk))  # what PEOPLE_WAITING_SECONDS does
    assert isinstance(quotas.quota_take(config, person=False), quotas.Slot)  # nobody waiting: the run goes on
