"""Writes of the evaluation app: outcome counters (incremental and full recompute) and aggregation jobs.

Consistency: every change to a batch's counters happens inside a transaction that first locks the batch's
`BatchAggregate` row. Incremental updates of one batch therefore run one at a time, and a recompute (a few
seconds for 250k sessions) makes them wait, after which they see the recomputed `CountedSession` rows and
skip the sessions already counted.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from typing import TYPE_CHECKING, Any, TypeVar

from django.db import connection, transaction
from django.db.models import Count, F, Model, Q, Sum
from django.utils import timezone

from annotate import queue_contract
from annotate.jobs.services import job_fail
from annotate.models import Batch, Job, Session, Task, User
from evaluation.models import (
    NEVER,
    AnnotatorOutcomeCounter,
    BatchAggregate,
    CountedSession,
    OutcomeCounter,
    outcome_of,
)

if TYPE_CHECKING:
    from django.db.backends.utils import CursorWrapper

Counter = TypeVar("Counter", OutcomeCounter, AnnotatorOutcomeCounter)
logger = logging.getLogger(__name__)


def _lock_aggregate(batch_id: int) -> BatchAggregate:
    aggregate, _ = BatchAggregate.objects.select_for_update().get_or_create(batch_id=batch_id)
    return aggregate


def _bump(model: type[Counter], key: dict[str, object], delta: int) -> None:
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
            Session.objects.filter(pk=session_id, status=Session.Status.COMPLETED, bench_run__isnull=True,
                                   task__is_gold=False)
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


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _columns(*names: str) -> str:
    return ", ".join(connection.ops.quote_name(name) for name in names)


_FALSE = "FALSE"  # a boolean literal both PostgreSQL and SQLite (3.23+) read

_COUNTED = ("session_id", "batch_id", "model_config_id", "category", "annotator_id", "corrected_round",
            "completed_at")


_INSERT_CHUNK = 5000  # ids per INSERT: well under SQLite's 32766 bound parameters


def _counted_select() -> str:
    """Each completed session of a batch as a CountedSession row (the `s` and `t` aliases are used below)."""
    return (
        f"SELECT s.id, s.batch_id, s.model_config_id, t.category, s.annotator_id, "
        f"COALESCE(s.corrected_round, {NEVER}), COALESCE(s.completed_at, s.started_at) "
        f"FROM {_table(Session)} s JOIN {_table(Task)} t ON t.id = s.task_id "
        f"WHERE s.batch_id = %s AND s.status = %s AND s.bench_run_id IS NULL"  # human sessions only,
        f" AND t.is_gold = {_FALSE}"  # not attention checks (served to everyone, outside the overlap)
    )


def _reconcile_counted(cursor: CursorWrapper, batch_id: int) -> tuple[int, int]:
    """Make the batch's CountedSession rows equal to its completed sessions, touching only the differences.

    Anti-joins instead of delete-all-and-reinsert: a recount where nothing drifted writes nothing. The
    column comparisons use IS NOT DISTINCT FROM, which PostgreSQL cannot hash, so it hashes on the session id
    alone and checks the rest as a filter (2x faster than hashing seven columns). Plain SQL, as the ORM has
    no INSERT ... SELECT; portable to SQLite >= 3.39. Returns (rows removed, rows added).
    """
    counted = _table(CountedSession)
    same = " AND ".join(
        f"{mine} IS NOT DISTINCT FROM {counted}.{column}"
        for mine, column in [
            ("s.batch_id", "batch_id"), ("s.model_config_id", "model_config_id"), ("t.category", "category"),
            ("s.annotator_id", "annotator_id"), (f"COALESCE(s.corrected_round, {NEVER})", "corrected_round"),
            ("COALESCE(s.completed_at, s.started_at)", "completed_at"),
        ]
    )
    cursor.execute(
        f"DELETE FROM {counted} WHERE batch_id = %s AND NOT EXISTS ("
        f"SELECT 1 FROM {_table(Session)} s JOIN {_table(Task)} t ON t.id = s.task_id "
        f"WHERE s.id = {counted}.session_id AND s.batch_id = %s AND s.status = %s AND s.bench_run_id IS NULL "
        f"AND t.is_gold = {_FALSE} AND {same})",
        [batch_id, batch_id, Session.Status.COMPLETED],
    )
    removed = cursor.rowcount
    if not CountedSession.objects.filter(batch_id=batch_id).exists():  # first count: no anti-join needed
        cursor.execute(f"INSERT INTO {counted} ({_columns(*_COUNTED)}) {_counted_select()}",
                       [batch_id, Session.Status.COMPLETED])
        return removed, cursor.rowcount
    # Which sessions are missing is read first, and only then inserted: an INSERT that anti-joins the table it
    # grows can get a nested-loop plan (when the table looked empty at plan time) that rescans its own new rows.
    cursor.execute(
        f"SELECT s.id FROM {_table(Session)} s JOIN {_table(Task)} t ON t.id = s.task_id "
        f"WHERE s.batch_id = %s AND s.status = %s AND s.bench_run_id IS NULL AND t.is_gold = {_FALSE} "
        f"AND NOT EXISTS (SELECT 1 FROM {counted} c WHERE c.session_id = s.id)",
        [batch_id, Session.Status.COMPLETED],
    )
    missing = [row[0] for row in cursor.fetchall()]
    for start in range(0, len(missing), _INSERT_CHUNK):
        chunk = missing[start : start + _INSERT_CHUNK]
        cursor.execute(
            f"INSERT INTO {counted} ({_columns(*_COUNTED)}) {_counted_select()} "
            f"AND s.id IN ({', '.join(['%s'] * len(chunk))})",
            [batch_id, Session.Status.COMPLETED, *chunk],
        )
    return removed, len(missing)


def _write_counts(model: type[Counter], batch_id: int, fields: tuple[str, ...], wanted: dict[tuple[object, ...], int]) -> None:
    """Make the batch's rows of a counter table equal to `wanted`, writing only the rows that differ.

    A changed row is deleted and inserted again: two plain statements, where bulk_update would build a CASE
    expression per row (seconds of CPU for a few thousand rows).
    """
    existing = {
        tuple(row[:-2]): (row[-2], row[-1])
        for row in model.objects.filter(batch_id=batch_id).values_list(*fields, "pk", "count")
    }
    outdated = [pk for key, (pk, count) in existing.items() if wanted.get(key) != count]
    for start in range(0, len(outdated), _INSERT_CHUNK):
        model.objects.filter(pk__in=outdated[start : start + _INSERT_CHUNK]).delete()
    model.objects.bulk_create(
        [model(batch_id=batch_id, count=n, **dict(zip(fields, key, strict=True)))
         for key, n in wanted.items() if existing.get(key, (None, None))[1] != n],
        batch_size=2000,
    )


_KEY = ("model_config_id", "category", "corrected_round")


def _sync_counters(cursor: CursorWrapper, batch_id: int) -> None:
    """Both counter tables from one GROUP BY over the batch's CountedSession rows."""
    if not OutcomeCounter.objects.filter(batch_id=batch_id).exists():
        _insert_counters(cursor, batch_id)  # first count: nothing to compare with, so let SQL write them
        return
    grouped = (
        CountedSession.objects.filter(batch_id=batch_id)
        .values_list(*_KEY, "annotator_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    overall: dict[tuple[object, ...], int] = {}
    by_annotator: dict[tuple[object, ...], int] = {}
    for model_config_id, category, corrected_round, annotator_id, n in grouped:
        key = (model_config_id, category, corrected_round)
        overall[key] = overall.get(key, 0) + n
        if annotator_id is not None:
            by_annotator[(annotator_id, *key)] = n
    _write_counts(OutcomeCounter, batch_id, _KEY, overall)
    _write_counts(AnnotatorOutcomeCounter, batch_id, ("annotator_id", *_KEY), by_annotator)


def _insert_counters(cursor: CursorWrapper, batch_id: int) -> None:
    AnnotatorOutcomeCounter.objects.filter(batch_id=batch_id).delete()
    for model, extra, where in [(OutcomeCounter, (), ""),
                                (AnnotatorOutcomeCounter, ("annotator_id",), " AND annotator_id IS NOT NULL")]:
        cursor.execute(
            f"INSERT INTO {_table(model)} ({_columns('batch_id', *_KEY, *extra, 'count')}) "
            f"SELECT batch_id, {_columns(*_KEY, *extra)}, COUNT(*) FROM {_table(CountedSession)} "
            f"WHERE batch_id = %s{where} GROUP BY batch_id, {_columns(*_KEY, *extra)}",
            [batch_id],
        )


def outcome_recompute(*, batch_id: int) -> dict[str, Any]:
    """Recount every completed session of the batch (repairs any drift of the counters). Returns a report."""
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        aggregate = _lock_aggregate(batch_id)
        removed, added = _reconcile_counted(cursor, batch_id)
        _sync_counters(cursor, batch_id)
        sessions = OutcomeCounter.objects.filter(batch_id=batch_id).aggregate(n=Sum("count"))["n"] or 0
        aggregate.updated_at = aggregate.recomputed_at = timezone.now()
        aggregate.save(update_fields=["updated_at", "recomputed_at"])
    return {"sessions": sessions, "removed": removed, "added": added,
            "seconds": round(time.perf_counter() - started, 3)}


# --- aggregation jobs -----------------------------------------------------------------------------


def recompute_job_create(*, batch: Batch, user: User | None = None) -> Job:
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
    try:
        queue_contract.send_task(queue_contract.OUTCOME_RECOMPUTE, args=[job_id], retry=True,
                                 retry_policy={"max_retries": 2})
    except Exception as error:  # kombu raises various connection errors; all mean "not queued"
        logger.exception("could not queue aggregation job %s", job_id)
        job_fail(job_id=job_id, error=f"Could not reach the task queue: {error}")


# A RUNNING job older than this lost its worker (the task's hard limit is 660 s): a redelivery may take it.
STALE_JOB_AFTER = dt.timedelta(minutes=15)


def job_claim(*, job_id: int) -> Job | None:
    """QUEUED -> RUNNING with a conditional update; None when another worker has it (or it is finished)."""
    now = timezone.now()
    claimable = Q(status=Job.Status.QUEUED) | Q(status=Job.Status.RUNNING, started_at__lt=now - STALE_JOB_AFTER)
    claimed = Job.objects.filter(claimable, pk=job_id).update(
        status=Job.Status.RUNNING, started_at=now, progress=0.0, message="Counting sessions"
    )
    return Job.objects.filter(pk=job_id).first() if claimed else None



def recompute_job_run(*, job_id: int) -> Job | None:
    """Run a queued recompute job: claim it, recompute, record the report. A job already taken is skipped.

    Progress goes 0 -> 1 in one step: the recount is one transaction of a few seconds, with nothing to show
    in between that another connection could see.
    """
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

