"""Celery entry points of the next-item queue. Task names are the queue contract: set explicitly."""

from __future__ import annotations

from celery import shared_task

from annotate import queue_contract
from annotate.assignments import assignments_expire


@shared_task(name=queue_contract.ASSIGNMENTS_EXPIRE, ignore_result=True, expires=30)
def assignments_expire_task() -> int:
    """Celery beat, every few seconds: leases that ran out go back to the pool, so an item someone left is served
    again in its turn, not only once the rest of the batch is taken (one indexed probe when none did)."""
    return assignments_expire()
