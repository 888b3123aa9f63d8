"""The evaluation app's listener on annotate's session-completed hook: a completed (or re-judged) session is
counted for the reports."""

from __future__ import annotations

import logging

from django.db import OperationalError

from annotate import queue_contract
from evaluation.interfeedback import services

logger = logging.getLogger(__name__)


def count_session_outcome(session_id: int, *, in_worker: bool) -> None:
    """In a worker, count at once (one Celery task fewer per session); a busy counter (lock timeout, dropped
    connection) hands it to the retrying task. From a web request, always the task (after the commit)."""
    if in_worker:
        try:
            services.outcome_record(session_id=session_id)
            return
        except OperationalError:
            logger.warning("counting session %s now failed; queued for a retry", session_id, exc_info=True)
    try:
        queue_contract.send_task(queue_contract.OUTCOME_RECORD, args=[session_id])
    except Exception:  # the session is saved; a recount (recompute_outcomes) repairs the counters later
        logger.warning("could not queue the outcome count of session %s", session_id, exc_info=True)
