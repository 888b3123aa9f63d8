"""Aggregation benchmark: 1M rounds of InterFeedback sessions, full recompute and report page times.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_db .venv/bin/python benchmarks/aggregation.py

Loads (once; reused on later runs unless --fresh) a batch "bench-aggregation" with --rounds rounds spread over
~290k completed sessions (models x categories x annotators), using COPY on PostgreSQL (executemany elsewhere).
Then times: the full recompute (services.outcome_recompute), the report page and its filtered variants, the
session browser and the API report (Django test Client, --runs runs each: p50/p95), and incremental counting.
Targets: recompute <= 5 s, report page <= 200 ms. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotate.config.settings")
os.environ.setdefault("SECRET_KEY", "benchmark-only-secret-key")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.management.color import no_style  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.db.models import Max  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from annotate.importkit.bulk import copy_from_text  # noqa: E402
from annotate.models import Batch, ModelConfig, Round, Session, Task, User  # noqa: E402
from evaluation.interfeedback import services  # noqa: E402
from evaluation.models import AnnotatorOutcomeCounter, BatchAggregate, CountedSession, OutcomeCounter  # noqa: E402

BATCH_NAME = "bench-aggregation"
CATEGORIES = ["Visual Logic", "Mathematical Logic", "Algorithmic Problem", "Math (Text)", "Coding (Text)",
              "Chart QA", "Science", "Commonsense"]
# Share of sessions first corrected in round 0, 1, 2, 3 and never; ~3.45 rounds per session.
OUTCOME_SHARES = [0.10, 0.10, 0.05, 0.10, 0.65]
NOW = dt.datetime(2025, 6, 1, tzinfo=dt.UTC)


# --- bulk loading -------------------------------------------------------------------------------


def _copy_text(value) -> str:
    if value is None:
        return r"\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, dict | list):
        value = json.dumps(value)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    text = str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _constant_columns(model, varying: list[str]) -> tuple[list[str], list]:
    """Every other concrete column, with its default (auto_now fields: a fixed time)."""
    names, values = [], []
    for field in model._meta.concrete_fields:
        if field.column in varying or field.primary_key:  # a primary key not given is assigned by the database
            continue
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            value = NOW
        else:
            value = field.get_default()  # "" for text fields without a default, None for others
            if value is None and not field.null:
                raise SystemExit(f"{model.__name__}.{field.name} has no default: give it in the benchmark's rows")
        names.append(field.column)
        values.append(value)
    return names, values


def bulk_insert(model, varying: list[str], rows) -> int:
    """Insert rows (tuples of the `varying` columns); other columns get their defaults. COPY on PostgreSQL."""
    const_names, const_values = _constant_columns(model, varying)
    columns = varying + const_names
    table = model._meta.db_table
    count = 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            tail = "\t".join(_copy_text(v) for v in const_values)
            buffer = io.StringIO()
            for row in rows:
                buffer.write("\t".join(_copy_text(v) for v in row))
                buffer.write("\t" + tail + "\n" if tail else "\n")
                count += 1
            quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
            copy_from_text(cursor, f"COPY {connection.ops.quote_name(table)} ({quoted}) FROM STDIN", buffer.getvalue())
        else:
            constant = tuple(json.dumps(v) if isinstance(v, dict | list) else v for v in const_values)
            sql = (f"INSERT INTO {connection.ops.quote_name(table)} "
                   f"({', '.join(connection.ops.quote_name(c) for c in columns)}) "
                   f"VALUES ({', '.join(['%s'] * len(columns))})")
            chunk = []
            for row in rows:
                chunk.append(tuple(row) + constant)
                if len(chunk) == 20000:
                    cursor.executemany(sql, chunk)
                    count, chunk = count + len(chunk), []
            if chunk:
                cursor.executemany(sql, chunk)
                count += len(chunk)
    return count


def _reset_sequences(*models) -> None:
    with connection.cursor() as cursor:
        for sql in connection.ops.sequence_reset_sql(no_style(), list(models)):
            cursor.execute(sql)


def drop_batch(batch: Batch) -> None:
    """Raw deletes: the ORM's cascade would load a million rounds into memory."""
    q = connection.ops.quote_name
    session, rnd = q(Session._meta.db_table), q(Round._meta.db_table)
    with transaction.atomic(), connection.cursor() as cursor:
        for model in (CountedSession, OutcomeCounter, AnnotatorOutcomeCounter, BatchAggregate):
            cursor.execute(f"DELETE FROM {q(model._meta.db_table)} WHERE batch_id = %s", [batch.id])
        cursor.execute(f"DELETE FROM {rnd} WHERE session_id IN (SELECT id FROM {session} WHERE batch_id = %s)",
                       [batch.id])
        cursor.execute(f"DELETE FROM {session} WHERE batch_id = %s", [batch.id])
    batch.delete()


def load(args) -> Batch:
    rng = np.random.default_rng(7)
    started = time.perf_counter()
    models = [ModelConfig.objects.get_or_create(name=f"bench-model-{i}", defaults={"backend": "replay"})[0]
              for i in range(args.models)]
    annotators = []
    for i in range(args.annotators):
        user, _ = User.objects.get_or_create(username=f"bench-ann-{i}", defaults={"role": User.Role.ANNOTATOR,
                                                                                  "password": "!"})
        annotators.append(user.id)
    researcher, _ = User.objects.get_or_create(username="bench-researcher",
                                               defaults={"role": User.Role.RESEARCHER, "password": "!"})
    batch = Batch.objects.create(name=BATCH_NAME, task_count=args.tasks)
    batch.models_to_evaluate.set(models)
    batch.members.set([researcher])

    # Draw outcomes for more sessions than needed, then keep just enough for --rounds rounds.
    mean_rounds = sum(share * min(k + 1, 4) for k, share in enumerate(OUTCOME_SHARES))
    drawn = int(args.rounds / mean_rounds * 1.2) + 10
    model_of = rng.integers(0, len(models), drawn)
    outcome_of = np.empty(drawn, dtype=np.int64)
    for m in range(len(models)):  # each model its own outcome mix, so the tables differ by model
        mask = model_of == m
        shares = np.array(OUTCOME_SHARES) * np.array([1 + 0.3 * m, 1, 1, 1, 1])
        outcome_of[mask] = rng.choice(5, size=int(mask.sum()), p=shares / shares.sum())
    n_sessions = int(np.searchsorted(np.cumsum(np.minimum(outcome_of + 1, 4)), args.rounds)) + 1
    model_of, outcome_of = model_of[:n_sessions], outcome_of[:n_sessions]
    with transaction.atomic():
        first_task = (Task.objects.aggregate(m=Max("id"))["m"] or 0) + 1
        bulk_insert(Task, ["id", "batch_id", "external_id", "category", "question", "answer_type", "ground_truth"],
                    ((first_task + i, batch.id, f"t{i}", CATEGORIES[i % len(CATEGORIES)], "How many?", "number",
                      "7") for i in range(args.tasks)))
        first_session = (Session.objects.aggregate(m=Max("id"))["m"] or 0) + 1
        task_of = rng.integers(0, args.tasks, n_sessions)
        annotator_of = rng.integers(0, len(annotators), n_sessions)
        seconds = rng.integers(0, 60 * 86400, n_sessions)
        base = NOW - dt.timedelta(days=60)
        completed = [base + dt.timedelta(seconds=int(s)) for s in seconds]
        bulk_insert(Session, ["id", "batch_id", "task_id", "model_config_id", "annotator_id", "status",
                              "corrected_round", "completed_at"],
                    ((first_session + i, batch.id, first_task + int(task_of[i]), models[model_of[i]].id,
                      annotators[annotator_of[i]], "completed", None if outcome_of[i] == 4 else int(outcome_of[i]),
                      completed[i]) for i in range(n_sessions)))
        _reset_sequences(Task, Session)

        def rounds():
            for i in range(n_sessions):
                outcome = int(outcome_of[i])
                last = 3 if outcome == 4 else outcome
                for index in range(last + 1):
                    yield (first_session + i, index, "" if index == 0 else "Look at the left part again.",
                           "" if index == 0 else ("ground_truth" if index == 3 else "human"),
                           f"Counting again... Answer: {index}", str(index), index == outcome, index == outcome,
                           "done", 800 + index, completed[i])

        n_rounds = bulk_insert(Round, ["session_id", "index", "feedback_text", "feedback_kind", "answer_text",
                                       "extracted_answer", "auto_verdict", "final_verdict", "generation_status",
                                       "latency_ms", "finished_at"], rounds())
    _analyze()
    print(f"loaded {args.tasks} tasks, {n_sessions} sessions, {n_rounds} rounds in "
          f"{time.perf_counter() - started:.1f} s ({connection.vendor})")
    return batch


def _analyze() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for model in (Task, Session, Round, CountedSession, OutcomeCounter, AnnotatorOutcomeCounter):
                cursor.execute(f"VACUUM ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


# --- timing -------------------------------------------------------------------------------------


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return f"p50 {statistics.median(ordered) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms   (n={len(ordered)})"


def time_get(client: Client, label: str, url: str, runs: int) -> None:
    client.get(url)  # warm up (templates, first query plans)
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(url)
        samples.append(time.perf_counter() - started)
        assert response.status_code == 200, (url, response.status_code)
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    print(f"{label:<44} {_percentiles(samples)}   {len(queries)} queries")


def _backend_cpu() -> float | None:
    """CPU seconds used so far by this connection's PostgreSQL backend, when it runs on this machine."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _time_recompute(label: str, batch: Batch) -> float:
    """Wall time, plus the CPU time of this process and of the database backend: on a shared machine the
    wall time mostly measures the other processes, the CPU time the work itself."""
    db_before, cpu_before = _backend_cpu(), time.process_time()
    started = time.perf_counter()
    report = services.outcome_recompute(batch_id=batch.id)
    elapsed = time.perf_counter() - started
    db_after, cpu = _backend_cpu(), time.process_time() - cpu_before
    db = f", database CPU {db_after - db_before:.2f} s" if db_before is not None and db_after is not None else ""
    print(f"{label:<44} {elapsed:6.2f} s   (python CPU {cpu:.2f} s{db}; {report['sessions']} sessions, "
          f"{report['added']} added, {report['removed']} removed)")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1_000_000)
    parser.add_argument("--tasks", type=int, default=25_000)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--annotators", type=int, default=200)
    parser.add_argument("--runs", type=int, default=30, help="Timed requests per page")
    parser.add_argument("--recomputes", type=int, default=3)
    parser.add_argument("--fresh", action="store_true", help="Drop and reload the benchmark batch")
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    batch = Batch.objects.filter(name=BATCH_NAME).first()
    if batch is not None and args.fresh:
        drop_batch(batch)
        batch = None
    if batch is None:
        batch = load(args)
    sessions = Session.objects.filter(batch=batch).count()
    rounds = Round.objects.filter(session__batch=batch).count()
    print(f"batch {batch.name!r} (id {batch.id}): {sessions} sessions, {rounds} rounds, database {connection.vendor}; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")

    # Cold: nothing counted yet (a fresh install, or sessions loaded in bulk): every session is added.
    with connection.cursor() as cursor:
        for model in (CountedSession, OutcomeCounter, AnnotatorOutcomeCounter):
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(model._meta.db_table)} WHERE batch_id = %s",
                           [batch.id])
    _time_recompute("full recompute, cold (nothing counted yet)", batch)
    _analyze()  # what autovacuum does soon after a bulk change; keeps index-only scans index-only
    # Warm: the counters are right; the recount checks every session and changes nothing.
    times = [_time_recompute(f"full recompute, warm #{run + 1}", batch) for run in range(args.recomputes)]
    # Drift: 1% of the sessions changed outcome since they were counted.
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {q(Session._meta.db_table)} SET corrected_round = CASE WHEN corrected_round IS NULL "
                       f"THEN 3 ELSE NULL END WHERE batch_id = %s AND id %% 100 = 0", [batch.id])
    _time_recompute("full recompute, 1% of sessions drifted", batch)
    with connection.cursor() as cursor:  # put them back (and recount) so the next run starts the same
        cursor.execute(f"UPDATE {q(Session._meta.db_table)} SET corrected_round = CASE WHEN corrected_round IS NULL "
                       f"THEN 3 ELSE NULL END WHERE batch_id = %s AND id %% 100 = 0", [batch.id])
    services.outcome_recompute(batch_id=batch.id)
    print(f"full recompute (warm): best {min(times):.2f} s, median {statistics.median(times):.2f} s   "
          f"(target <= 5 s)")

    client = Client()
    client.force_login(User.objects.get(username="bench-researcher"))
    annotator = User.objects.get(username="bench-ann-3").pseudonym
    base = f"/research/batches/{batch.id}/"
    time_get(client, "report page", base, args.runs)
    time_get(client, "report page, model + category", f"{base}?model=bench-model-1&category=Science", args.runs)
    time_get(client, "report page, annotator", f"{base}?annotator={annotator}", args.runs)
    time_get(client, "report page, date range (30 days)", f"{base}?date_from=2025-04-15&date_to=2025-05-14",
             args.runs)
    time_get(client, "report page, date range + annotator",
             f"{base}?date_from=2025-04-15&date_to=2025-05-14&annotator={annotator}", args.runs)
    time_get(client, "session browser, page 1", f"{base}sessions/", args.runs)
    time_get(client, "session browser, never + model, page 3", f"{base}sessions/?outcome=never&model=bench-model-0"
             f"&page=3", args.runs)
    time_get(client, "API report (JSON)", f"/api/batches/{batch.id}/report/", args.runs)
    time_get(client, "Fig. 4 SVG (matplotlib)", f"{base}export/fig4.svg", max(3, args.runs // 5))

    # Incremental: sessions completing one at a time (each its own transaction, as in the worker).
    task = Task.objects.filter(batch=batch).first()
    model = ModelConfig.objects.get(name="bench-model-0")
    fresh = Session.objects.bulk_create([
        Session(batch=batch, task=task, model_config=model, status=Session.Status.COMPLETED,
                corrected_round=i % 4, completed_at=NOW) for i in range(200)])
    samples = []
    for session in fresh:
        started = time.perf_counter()
        services.outcome_record(session_id=session.id)
        samples.append(time.perf_counter() - started)
    print(f"{'outcome_record (incremental, per session)':<44} {_percentiles(samples)}")
    Session.objects.filter(pk__in=[session.id for session in fresh]).delete()  # leave the batch as it was
    services.outcome_recompute(batch_id=batch.id)


if __name__ == "__main__":
    main()
