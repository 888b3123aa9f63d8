"""Health probes (annotate.health): celery beat fans one probe out per model onto the model's own queue; the
probe sends the model check's short text prompt and keeps its latency or its error."""

from __future__ import annotations

import logging

from django.conf import settings

from annotate import health, queue_contract
from annotate.modelconfigs.check import model_check_execute
from annotate.models import ModelConfig

logger = logging.getLogger(__name__)


def models_probe_dispatch() -> int:
    """Queue one probe per model to probe; returns how many. A probe not taken within a period is dropped
    (``expires``), so probes do not pile up in front of a worker that is down."""
    configs = health.models_to_probe()
    for config in configs:
        queue_contract.send_task(queue_contract.MODEL_PROBE, args=[config.pk], queue=config.queue_name,
                                 expires=settings.MODEL_PROBE_SECONDS, soft_time_limit=config.soft_time_limit,
                                 time_limit=config.time_limit)
    return len(configs)


def model_probe_run(*, config_id: int) -> None:
    config = ModelConfig.objects.filter(pk=config_id, is_active=True).first()
    if config is None:
        return
    try:
        report = model_check_execute(config=config, with_image=False)
    except Exception as error:  # any failure is the probe's finding, kept for the Models page
        logger.info("probe of model %s failed: %s", config.name, error)
        health.probe_record(config, latency_ms=None, error=f"{type(error).__name__}: {error}")
    else:
        health.probe_record(config, latency_ms=report["latency_ms"])
