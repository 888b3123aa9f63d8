"""Per-model quotas, enforced across every worker through Redis: calls at once, calls started per minute, and
tokens per minute.

- ``requests_per_minute``: the `limits` library's moving window (its Redis storage), one hit per call.
- ``tokens_per_minute``: the same window, charged with the prompt + completion tokens a call used once it has
  answered (the server's usage); a call starts only while the minute's tokens are not spent.
- ``max_concurrent_requests``: one lease per call in a Redis sorted set (annotate.server.leases: counted and taken
  in one Lua script, so two workers never both take the last slot). A lease lapses after the model's hard time
  limit, so a killed worker does not hold its slot for ever.

A call that finds its quota full does not start: ``quota_take`` says how long to wait. The round's Celery task
then comes back later without having claimed its round (nothing to lose or double, no model error); a bench
lane waits in place. Models without quotas make no Redis call at all.

People come first: while a person's round waits for its model's quota (and for a few seconds after), bench and
FIRE runs start no call on that model, so a run never takes the slots a person is waiting for.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import redis
from django.conf import settings
from limits import RateLimitItemPerMinute, strategies
from limits.storage import storage_from_string

from annotate.models import ModelConfig
from annotate.server.leases import lease_release, lease_take

_SLOTS_KEY = "model-quota:calls-now:{}"
WAIT_WHEN_FULL_SECONDS = 1.0  # how soon a call that found every slot taken asks again
_PEOPLE_WAITING_KEY = "model-quota:people-waiting:{}"
PEOPLE_WAITING_SECONDS = 3  # a person's waiting round asks again within WAIT_WHEN_FULL_SECONDS: this outlasts it


def _storage_uri() -> str:
    url = settings.REDIS_URL
    return "redis+unix://" + url.removeprefix("unix://") if url.startswith("unix://") else url


@cache
def _limiter() -> strategies.MovingWindowRateLimiter:
    return strategies.MovingWindowRateLimiter(storage_from_string(_storage_uri()))


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL)


def has_quota(config: ModelConfig) -> bool:
    return bool(config.max_concurrent_requests or config.requests_per_minute or config.tokens_per_minute)


@dataclass
class Slot:
    """A call's place in its model's quota: give it back with ``release`` (tokens charged there)."""

    config: ModelConfig
    token: str | None  # the concurrency lease, when the model has that quota

    def release(self, *, tokens: int | None = None) -> None:
        if self.token is not None:  # once: a call may give its slot back before its caller's `finally` does
            lease_release(_redis(), _SLOTS_KEY.format(self.config.pk), self.token)
            self.token = None
        if tokens and self.config.tokens_per_minute:
            # A window takes no more than it has left: a call that overran the minute fills it (no call starts
            # until its oldest tokens age out), it does not fail to count.
            tpm, key = RateLimitItemPerMinute(self.config.tokens_per_minute), str(self.config.pk)
            left = _limiter().get_window_stats(tpm, "model-tpm", key).remaining
            if left > 0:
                _limiter().hit(tpm, "model-tpm", key, cost=min(tokens, left))


def quota_take(config: ModelConfig, *, person: bool = True) -> Slot | float:
    """A slot for one call now, or the seconds to wait before asking again. ``person``: a person's round (False:
    a bench or FIRE run's call, which yields to people waiting on the same model)."""
    if not has_quota(config):
        return Slot(config, None)
    if not person and _redis().exists(_PEOPLE_WAITING_KEY.format(config.pk)):
        return WAIT_WHEN_FULL_SECONDS
    taken = _take(config)
    if person and not isinstance(taken, Slot):
        _redis().set(_PEOPLE_WAITING_KEY.format(config.pk), 1, ex=PEOPLE_WAITING_SECONDS)
    return taken


def _take(config: ModelConfig) -> Slot | float:
    limiter, key = _limiter(), str(config.pk)
    if config.tokens_per_minute:
        tpm = RateLimitItemPerMinute(config.tokens_per_minute)
        if not limiter.test(tpm, "model-tpm", key):
            return _until(limiter.get_window_stats(tpm, "model-tpm", key).reset_time)
    token = None
    if config.max_concurrent_requests:
        token = uuid.uuid4().hex
        taken, lapses_at = lease_take(_redis(), _SLOTS_KEY.format(config.pk), limit=config.max_concurrent_requests,
                                      lapses_in=config.time_limit + 30, token=token)
        if not taken:
            return min(WAIT_WHEN_FULL_SECONDS, max(0.05, lapses_at - time.time()))
    if config.requests_per_minute:
        rpm = RateLimitItemPerMinute(config.requests_per_minute)
        if not limiter.hit(rpm, "model-rpm", key):
            Slot(config, token).release()
            return _until(limiter.get_window_stats(rpm, "model-rpm", key).reset_time)
    return Slot(config, token)


def quota_wait(config: ModelConfig, *, keep_alive: Callable[[], object] = lambda: None) -> Slot:
    """Wait in place for a slot (bench lanes), calling ``keep_alive`` between tries."""
    while not isinstance(taken := quota_take(config, person=False), Slot):
        keep_alive()
        time.sleep(taken)
    return taken


def _until(reset_time: float) -> float:
    return max(0.05, reset_time - time.time())
