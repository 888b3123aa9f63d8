"""Celery entry points of the Prolific study (beat: annotate.config.settings.CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from annotate import queue_contract
from annotate.prolific.sync import prolific_studies_sync as _sync


@shared_task(name=queue_contract.PROLIFIC_STUDIES_SYNC, acks_late=True, soft_time_limit=120,
             time_limit=150)
def prolific_studies_sync() -> int:
    """Sync every running Prolific study's submissions (idempotent: a return already marked stays as it is)."""
    return _sync()
