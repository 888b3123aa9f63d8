"""Writes of the evaluation app: outcome counters (incremental and full recompute) and aggregation jobs.

Consistency: every change to a batch's counters happens inside a transaction that first locks the batch's
`BatchAggregate` row. Incremental updates of one batch therefore run one at a time, and a recompute (a few
seconds for 250k sessions) makes them wait, after which they see the recomputed `CountedSession` rows and
skip the sessions already counted.
"""

from __future__ import annotations

import logging
import time

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from annotate.models import Batch, Job, Session, Task
from evaluation.models import (
    NEVER,
    AnnotatorOutcomeCounter,
    BatchAggregate,
    CountedSession,
    OutcomeCounter,
    outcome_of,
)

logger = logging.getLogger(__name__)


def _lock_aggregate(batch_id: int) -> BatchAggregate:
    aggregate, _ = BatchAggregate.objects.select_for_update().get_or_create(batch_id=batch_id)
    return aggregate


def _bump(model, key: dict, delta: int) -> None:
    """Add `delta` to one counter row, creating it if needed (safe: the caller holds the batch lock)."""
    if model.objects.filter(**key).update(count=F("count") + delta):
        return
    if delta > 0:
        model.objects.create(**key, count=delta)
    else:  # counters and CountedSession disagree: only a recompute can say what is right
        logger.warning("counter %s %s missing while removing a session; recompute the batch", model.__name__, key)


def _bump_all(counted: CountedSession, delta: int) -> None:
    key = {
        "batch_id": counted.batch_id,
        "model_config_id": counted.model_config_id,
        "category": counted.category,
        "corrected_round": counted.corrected_round,
    }
    _bump(OutcomeCounter, key, delta)
    if counted.annotator_id is not None:
        _bump(AnnotatorOutcomeCounter, {**key, "annotator_id": counted.annotator_id}, delta)


def outcome_record(*, session_id: int) -> bool:
    """Count a completed session in its batch's counters, once. Returns whether the counters changed.

    Idempotent: running it again for the same session changes nothing, unless the session's outcome changed
    since (a verdict override), in which case the session moves from its old counter cell to the new one.
    Sessions that are not completed (or no longer exist) are ignored.
    """
    batch_id = Session.objects.filter(pk=session_id).values_list("batch_id", flat=True).first()
    if batch_id is None:
        return False
    with transaction.atomic():
        aggregate = _lock_aggregate(batch_id)
        session = (
            Session.objects.filter(pk=session_id, status=Session.Status.COMPLETED)
            .values("batch_id", "model_config_id", "annotator_id", "corrected_round", "completed_at",
                    "started_at", "task__category")
            .first()
        )
        if session is None:
            return False
        outcome = outcome_of(session["corrected_round"])
        counted = CountedSession.objects.filter(session_id=session_id).first()
        if counted is not None and counted.corrected_round == outcome:
            return False
        if counted is not None:
            _bump_all(counted, -1)
            counted.corrected_round = outcome
            counted.save(update_fields=["corrected_round"])
        else:
            counted = CountedSession.objects.create(
                session_id=session_id,
                batch_id=session["batch_id"],
                model_config_id=session["model_config_id"],
                category=session["task__category"],
                annotator_id=session["annotator_id"],
                corrected_round=outcome,
                completed_at=session["completed_at"] or session["started_at"],
            )
        _bump_all(counted, +1)
        aggregate.updated_at = timezone.now()
        aggregate.save(update_fields=["updated_at"])
    return True


# --- full recompute -------------------------------------------------------------------------------


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _columns(*names: str) -> str:
    return ", ".join(connection.ops.quote_name(name) for name in names)


def _rebuild_batch(batch_id: int) -> int:
    """Rebuild the batch's CountedSession rows from sessions, then both counters with one GROUP BY each.

    Plain INSERT ... SELECT statements (the ORM has none): the rows never travel through Python, which is
    what keeps 250k sessions within a few seconds. The SQL is portable between PostgreSQL and SQLite.
    """
    counted_columns = ("session_id", "batch_id", "model_config_id", "category", "annotator_id",
                       "corrected_round", "completed_at")
    counter_columns = ("batch_id", "model_config_id", "category", "corrected_round")
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_table(CountedSession)} ({_columns(*counted_columns)}) "
            f"SELECT s.id, s.batch_id, s.model_config_id, t.category, s.annotator_id, "
            f"COALESCE(s.corrected_round, %s), COALESCE(s.completed_at, s.started_at) "
            f"FROM {_table(Session)} s JOIN {_table(Task)} t ON t.id = s.task_id "
            f"WHERE s.batch_id = %s AND s.status = %s",
            [NEVER, batch_id, Session.Status.COMPLETED],
        )
        inserted = cursor.rowcount
        cursor.execute(
            f"INSERT INTO {_table(OutcomeCounter)} ({_columns(*counter_columns, 'count')}) "
            f"SELECT {_columns(*counter_columns)}, COUNT(*) FROM {_table(CountedSession)} "
            f"WHERE batch_id = %s GROUP BY {_columns(*counter_columns)}",
            [batch_id],
        )
        cursor.execute(
            f"INSERT INTO {_table(AnnotatorOutcomeCounter)} ({_columns(*counter_columns, 'annotator_id', 'count')}) "
            f"SELECT {_columns(*counter_columns, 'annotator_id')}, COUNT(*) FROM {_table(CountedSession)} "
            f"WHERE batch_id = %s AND annotator_id IS NOT NULL "
            f"GROUP BY {_columns(*counter_columns, 'annotator_id')}",
            [batch_id],
        )
    return inserted


def outcome_recompute(*, batch_id: int) -> dict:
    """Recount every completed session of the batch from scratch (repairs any drift). Returns a report."""
    started = time.perf_counter()
    with transaction.atomic():
        aggregate = _lock_aggregate(batch_id)
        # No other table points at these rows, so each delete() is a single DELETE statement.
        CountedSession.objects.filter(batch_id=batch_id).delete()
        OutcomeCounter.objects.filter(batch_id=batch_id).delete()
        AnnotatorOutcomeCounter.objects.filter(batch_id=batch_id).delete()
        sessions = _rebuild_batch(batch_id)
        aggregate.updated_at = aggregate.recomputed_at = timezone.now()
        aggregate.save(update_fields=["updated_at", "recomputed_at"])
    return {"sessions": sessions, "seconds": round(time.perf_counter() - started, 3)}


# --- aggregation jobs -----------------------------------------------------------------------------


def recompute_job_create(*, batch: Batch, user=None) -> Job:
    """Queue a full recompute as a Job row; the Celery task is sent once the row is committed.

    If the broker cannot be reached the job is marked failed with that reason (never run in the web process).
    """
    job = Job.objects.create(
        kind=Job.Kind.AGGREGATE, batch=batch, created_by=user, params={"batch_id": batch.id},
        message="Waiting for a worker",
    )
    transaction.on_commit(lambda: _dispatch_recompute(job.id))
    return job


def _dispatch_recompute(job_id: int) -> None:
    from evaluation.tasks import outcome_recompute as recompute_task  # tasks import services

    try:
        recompute_task.apply_async(args=[job_id], retry=True, retry_policy={"max_retries": 2})
    except Exception as error:  # kombu raises various connection errors; all mean "not queued"
        logger.exception("could not queue aggregation job %s", job_id)
        job_fail(job_id=job_id, error=f"Could not reach the task queue: {error}")


def job_claim(*, job_id: int) -> Job | None:
    """QUEUED -> RUNNING with a conditional update; None when another worker has it (or it is finished)."""
    claimed = Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(
        status=Job.Status.RUNNING, started_at=timezone.now(), progress=0.0, message="Counting sessions"
    )
    return Job.objects.filter(pk=job_id).first() if claimed else None


def job_fail(*, job_id: int, error: str) -> None:
    Job.objects.filter(pk=job_id).exclude(status=Job.Status.SUCCEEDED).update(
        status=Job.Status.FAILED, error=error[:2000], message="Failed", finished_at=timezone.now()
    )


def recompute_job_run(*, job_id: int) -> Job | None:
    """Run a queued recompute job: claim it, recompute, record the report. A job already taken is skipped."""
    job = job_claim(job_id=job_id)
    if job is None:
        return None
    if job.batch_id is None:
        job_fail(job_id=job_id, error="The batch of this job no longer exists.")
        return job
    try:
        report = outcome_recompute(batch_id=job.batch_id)
    except Exception as error:
        job_fail(job_id=job_id, error=f"{type(error).__name__}: {error}")
        raise
    Job.objects.filter(pk=job_id).update(
        status=Job.Status.SUCCEEDED, progress=1.0, report=report, finished_at=timezone.now(),
        message=f"Counted {report['sessions']} sessions in {report['seconds']} s",
    )
    job.refresh_from_db()
    return job

