"""Celery entry points of crowd studies. Task names are the queue contract: set explicitly."""

from __future__ import annotations

from celery import shared_task

from annotate import queue_contract
from annotate.crowd.ending import participations_time_out


@shared_task(name=queue_contract.PARTICIPATIONS_TIME_OUT, ignore_result=True, expires=30)
def participations_time_out_task() -> int:
    """Celery beat, every few seconds: participations past their study's time limit end, and the items their
    participants held go back to the pool at once (one query when no study sets a limit)."""
    return participations_time_out()
