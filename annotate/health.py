"""A model's health: periodic probes, and a circuit breaker over its rounds.

- Probes (celery beat, every MODEL_PROBE_SECONDS): one short call per active model served by a real server
  (openai, transformers), on the model's own queue so a GPU model is probed where it is loaded. The latency or
  the error is kept on the ModelConfig (the Models page, `GET /api/models/`). A probe that answers closes the
  breaker.
- Breaker: MODEL_BREAKER_FAILURES rounds of one model failing in a row with a model error, counted in the shared
  cache (Redis) across workers, mark the model unavailable. Its rounds then fail at once, without a request to
  the server, saying so to the annotator (Retry stays offered), and the researcher's dashboard shows it, until
  a probe answers again.

The count is "in a row" as the workers see it: an answered round of the model resets it.
"""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from annotate.models import ModelConfig

PROBED_BACKENDS = ("openai", "transformers")  # simulated and replay models have no server to lose
UNAVAILABLE_MESSAGE = ("The model is unavailable right now (it failed several times in a row); we'll retry "
                       "shortly. Press Retry in a minute.")
_FAILURES_KEY = "model-health:failures-in-a-row:{}"


def _guarded(config: ModelConfig) -> bool:
    return config.backend in PROBED_BACKENDS and settings.MODEL_BREAKER_FAILURES > 0


def round_answered(config: ModelConfig) -> None:
    """An answered round: the failures in a row start again from zero."""
    if _guarded(config):
        cache.delete(_FAILURES_KEY.format(config.pk))


def round_failed(config: ModelConfig, error: str) -> bool:
    """A round failed with a model error; True when this failure opened the breaker."""
    if not _guarded(config):
        return False
    key = _FAILURES_KEY.format(config.pk)
    cache.add(key, 0, timeout=None)
    failures = cache.incr(key)
    if failures < settings.MODEL_BREAKER_FAILURES:
        return False
    reason = f"{failures} rounds failed in a row; the latest: {error}"[:2000]
    return bool(ModelConfig.objects.filter(pk=config.pk, unavailable_since__isnull=True).update(
        unavailable_since=timezone.now(), unavailable_reason=reason))


def is_unavailable(config: ModelConfig) -> bool:
    """Whether the breaker is open now (read fresh: a long bench run holds its ModelConfig for hours)."""
    return _guarded(config) and ModelConfig.objects.filter(pk=config.pk, unavailable_since__isnull=False).exists()


def probe_record(config: ModelConfig, *, latency_ms: int | None, error: str = "") -> None:
    """Keep a probe's outcome; one that answered closes the breaker and starts the count again."""
    changes: dict = {"probed_at": timezone.now(), "probe_latency_ms": latency_ms, "probe_error": error[:2000]}
    if not error:
        changes |= {"unavailable_since": None, "unavailable_reason": ""}
        cache.delete(_FAILURES_KEY.format(config.pk))
    ModelConfig.objects.filter(pk=config.pk).update(**changes)


def models_to_probe() -> list[ModelConfig]:
    return list(ModelConfig.objects.filter(is_active=True, backend__in=PROBED_BACKENDS).order_by("name"))
