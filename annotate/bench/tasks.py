"""Celery entry point of a bench run's lanes (queue ``bench``)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from annotate import queue_contract
from annotate.bench import engine


@shared_task(name=queue_contract.BENCH_LANE, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def bench_lane(run_id: int, lane: int) -> None:
    """Work on a lane for a few minutes, then queue its continuation (Celery's time limits stay short, and other
    runs' lanes get their turn)."""
    if engine.lane_run(run_id=run_id, lane=lane, seconds=engine.LANE_SLICE_SECONDS) == engine.PAUSED:
        queue_contract.send_task(queue_contract.BENCH_LANE, args=[run_id, lane], queue=settings.BENCH_QUEUE)
