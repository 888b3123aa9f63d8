"""What every kind of run's lane shares: the lease on its row, cancel and time-slice checks, and model calls that
return their error instead of raising it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from annotate import health, quotas
from annotate.models import BenchLane, BenchRun, ModelConfig
from models_runtime import GenerationSettings, Message, ModelRequest, TaskContext
from models_runtime.base import ModelError
from models_runtime.registry import get_backend


def lease() -> timedelta:
    """How long a lane's lease lasts without a renewal: a lane whose worker died is free again after this."""
    return timedelta(seconds=settings.BENCH_LANE_LEASE_SECONDS)


class LaneLost(Exception):
    """The lane's lease went to another worker (ours was presumed dead), or the run was cancelled."""


class LanePaused(Exception):
    """The lane's time slice is over: it lets go of its lease and continues in a new task."""


class LaneFailed(Exception):
    """A model call failed: what was made so far is kept, and resuming the run retries from there."""


@dataclass
class ModelReply:
    text: str
    error: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: int | None = None


def call(config: ModelConfig, messages: tuple[Message, ...], context: TaskContext, *,
         keep_alive: Callable[[], None] = lambda: None) -> ModelReply:
    """One model call through models_runtime; a model error is kept as the reply's error, never raised.

    The same guards as people's rounds: no request while the model's breaker is open, its failures and answers
    counted toward the breaker, and its quota shared (``keep_alive`` renews the lane's lease while waiting)."""
    if health.is_unavailable(config):
        return ModelReply(text="", error=health.UNAVAILABLE_MESSAGE)
    slot = quotas.quota_wait(config, keep_alive=keep_alive)
    try:
        backend = get_backend(config.backend, config.backend_settings)
        stream = backend.stream(ModelRequest(messages=messages, context=context,
                                             settings=GenerationSettings.from_dict(config.generation)))
        for _ in stream:
            pass
        result = stream.result
    except ModelError as error:
        health.round_failed(config, str(error))
        return ModelReply(text="", error=str(error)[:2000])
    finally:
        slot.release()
    slot.release(tokens=(result.prompt_tokens or 0) + (result.completion_tokens or 0))
    health.round_answered(config)
    return ModelReply(text=result.text, prompt_tokens=result.prompt_tokens,
                      completion_tokens=result.completion_tokens, latency_ms=round(result.latency * 1000))


class LeasedLane:
    """What every kind of run's lane shares: its lease (renewed as it works), cancel and time-slice checks."""

    def __init__(self, run: BenchRun, lane: int, token: str, deadline: float | None = None):
        self.run, self.lane, self.token, self.deadline = run, lane, token, deadline
        self.renewed_at = time.monotonic()

    def keep_alive(self) -> None:
        """Renew the lease between model calls too: a chunk of slow real models can outlast it."""
        if time.monotonic() - self.renewed_at > lease().total_seconds() / 3:
            self.renew(pause=False)  # pausing here would throw away the calls the chunk has made so far

    def call(self, config: ModelConfig, messages: tuple[Message, ...], context: TaskContext) -> ModelReply:
        """A model call that keeps the lease, before it and while it waits for the model's quota."""
        self.keep_alive()
        return call(config, messages, context, keep_alive=self.keep_alive)

    def renew(self, calls: int = 0, *, pause: bool = True) -> None:
        """Keep the lease (and count calls); stop when the run was cancelled or the lane taken over, and with
        ``pause`` when the time slice is over. Inside the transaction that saves a chunk, renew with pause=False
        and call ``pause_if_due`` after it commits: a pause raised inside would roll the chunk back, and a chunk
        longer than the slice would then be redone forever."""
        kept = BenchLane.objects.filter(run=self.run, lane=self.lane, lease_token=self.token).update(
            leased_until=timezone.now() + lease(), calls=F("calls") + calls)
        self.renewed_at = time.monotonic()
        if not kept:
            raise LaneLost(f"lane {self.lane} of run {self.run.pk} is no longer ours")
        if BenchRun.objects.filter(pk=self.run.pk, status=BenchRun.Status.CANCELLED).exists():
            raise LaneLost(f"run {self.run.pk} was cancelled")
        if pause:
            self.pause_if_due()

    def pause_if_due(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise LanePaused(f"lane {self.lane} of run {self.run.pk}: time slice over")

    def work(self) -> None:
        raise NotImplementedError


def lane_claim(*, run_id: int, lane: int, token: str) -> bool:
    now = timezone.now()
    free = Q(lease_token="") | Q(leased_until__lt=now) | Q(lease_token=token)
    return bool(BenchLane.objects.filter(free, run_id=run_id, lane=lane, done=False).update(
        lease_token=token, leased_until=now + lease()))
