"""Celery entry point of the admin's model check (default queue). The task name is the queue contract: set
explicitly."""

from __future__ import annotations

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from annotate import queue_contract
from annotate.modelconfigs import check as model_check
from annotate.modelconfigs import probe
from annotate.models import ModelConfig


# acks_late off on purpose: a check is cheap to run again, and a model that kills its worker (out of memory)
# must not be redelivered to the next worker in a loop. The job row already says "running" meanwhile.
@shared_task(name=queue_contract.MODEL_CHECK, acks_late=False)
def model_config_check_job(job_id: int) -> None:
    """The admin's "Test this model": one short prompt with an image (a Job row of kind model_check)."""
    try:
        model_check.model_config_check_run(job_id=job_id)
    except SoftTimeLimitExceeded:
        model_check.model_check_fail(job_id=job_id, error="The model took too long to answer (time limit).")
    except Exception as error:  # anything else still ends the job, so the page stops waiting
        model_check.model_check_fail(job_id=job_id, error=f"{type(error).__name__}: {error}")
        raise


@shared_task(name=queue_contract.MODELS_PROBE, ignore_result=True, expires=60)
def models_probe() -> int:
    """Celery beat: one health probe per model, each on the model's own queue (annotate.health)."""
    return probe.models_probe_dispatch()


@shared_task(name=queue_contract.MODEL_PROBE, ignore_result=True, acks_late=False)
def model_probe(config_id: int) -> None:
    try:
        probe.model_probe_run(config_id=config_id)
    except SoftTimeLimitExceeded:
        probe.health.probe_record(ModelConfig.objects.get(pk=config_id), latency_ms=None,
                                  error="The model took too long to answer the probe (time limit).")
