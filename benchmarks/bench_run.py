"""InterFeedback-Bench orchestration speed: a whole run through Celery with replay models, end to end.

Usage:
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/bench_run.py \\
      [--tasks 4000] [--receivers 2] [--providers 2] [--lanes 4] [--concurrency 2]

What runs: a scratch PostgreSQL database (``<name>_benchrun_bench``, dropped at the end), an embedded Redis, one
Celery worker on the ``bench`` queue (``--concurrency`` processes), and a run of R receivers x P providers x
``--tasks`` tasks x up to 3 rounds x 2 feedback kinds (detail and simple) on replay models with no per-chunk delay,
so that the models cost nothing and what is measured is the orchestration: round-0 answers, test sets, sessions,
feedback and answers, their verification and their rows. Each receiver is wrong at round 0 on about half the
tasks and corrected at round 1, 2, 3 or never; each provider is right on about two thirds.

Prints: the model calls and rounds made, ``N model rounds/s`` (rounds, round 0 included, per second of the run, from
the first lane's start to the last lane's end), model calls/s, the CPU split (worker, PostgreSQL, Redis, this
process, whole machine: the database backends of lanes that have ended are gone when it is read, so PostgreSQL's
share shows only in the whole machine's) and the time to the first table (Tables 1/2 from the finished run's rows).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.queue_load import configure, cpu_seconds, cpu_shares, scratch_database, tear_down  # noqa: E402

RIGHT, WRONG = "Checked.\nAnswer: A", "Guessing.\nAnswer: B"
FEEDBACK = ["Look at the left part again.", "Count the shapes once more.", "Compare the two halves."]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=4000)
    parser.add_argument("--receivers", type=int, default=2)
    parser.add_argument("--providers", type=int, default=2)
    parser.add_argument("--lanes", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes on the bench queue")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    return parser.parse_args()


def create_data(args) -> tuple[list[str], list[str]]:
    from django.core.management import call_command

    from annotate.models import Batch, ModelConfig, Task

    call_command("migrate", verbosity=0)
    rng = random.Random(7)
    receivers = [f"recv-{i}" for i in range(args.receivers)]
    providers = [f"prov-{i}" for i in range(args.providers)]
    for name in receivers + providers:
        ModelConfig.objects.create(name=name, backend=ModelConfig.Backend.REPLAY, backend_settings={"chunk_delay": 0})
    batch = Batch.objects.create(name="bench-run", status=Batch.Status.READY, task_count=args.tasks)
    tasks = []
    for i in range(args.tasks):
        recorded = {}
        for name in receivers:
            first_right = 0 if rng.random() < 0.5 else rng.choice([1, 2, 3, None])
            recorded[name] = [RIGHT if first_right is not None and k >= first_right else WRONG for k in range(4)]
        for name in providers:
            recorded[name] = [RIGHT if rng.random() < 0.67 else WRONG]
            recorded[f"{name}:feedback"] = FEEDBACK
        tasks.append(Task(batch=batch, external_id=f"t{i:05d}", category="Visual Logic", answer_type="choice",
                          options=["red", "green", "blue"], ground_truth="A", question=f"Which colour is shape {i}?",
                          recorded_answers=recorded))
    Task.objects.bulk_create(tasks, batch_size=2000)
    return receivers, providers


def start_bench_worker(env: dict, var_dir: Path, concurrency: int) -> subprocess.Popen:
    """A Celery worker on the bench queue, in a process group of its own; returns once it had time to connect."""
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "annotate", "worker", "-Q", "bench", "-c", str(concurrency),
         "--loglevel", "WARNING", "-n", f"benchrun-{os.getpid()}@%h", "--without-mingle", "--without-gossip"],
        cwd=ROOT, env={**env, "DB_POOL_MAX_SIZE": "0", "DB_CONN_MAX_AGE": "600"},
        stdout=(var_dir / "logs" / "worker.log").open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    time.sleep(3)  # the worker connects to the broker
    return worker


def worker_cpu(procs) -> dict[str, float]:
    """queue_load's CPU reading, for a run with no web process: its first process is the bench worker."""
    seconds = cpu_seconds(procs)
    # PostgreSQL is left out: the backends of lanes that ended are gone when it is read (it shows in the whole
    # machine's share, with the worker's pool children).
    return {"bench worker": seconds["web"], "Redis": seconds["Redis"], "this process": seconds["client"],
            "whole machine": seconds["whole machine"], "stolen by the host": seconds["stolen by the host"]}


@contextmanager
def scratch_run_environment(database_url: str | None, name: str) -> Iterator[tuple[dict, Path, list]]:
    """A scratch database ``<name>`` suffixed, an embedded Redis and the app configured for them; yields (the
    environment for worker processes, the var dir, the list to add processes to), then tears all of it down."""
    if not database_url:
        sys.exit("Set DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres) or pass --database-url")
    var_dir = ROOT / "var" / name
    (var_dir / "logs").mkdir(parents=True, exist_ok=True)
    scratch_url, scratch = scratch_database(database_url, False, suffix=f"_{name}")
    env = configure(scratch_url, var_dir)
    procs: list[subprocess.Popen] = []
    try:
        from django.conf import settings

        from annotate.server import embedded_redis

        embedded_redis.ensure_running(settings.VAR_DIR)
        yield env, var_dir, procs
    finally:
        tear_down(procs, var_dir, database_url, scratch)


def wait_for_run(run, procs) -> tuple[float, str]:
    """Wait for the run to end (exit unless it is done); (its seconds, the CPU split while it ran)."""
    from annotate.models import BenchRun

    before, start = worker_cpu(procs), time.perf_counter()
    while run.status in (BenchRun.Status.QUEUED, BenchRun.Status.RUNNING):
        time.sleep(0.2)
        run.refresh_from_db()
    elapsed = time.perf_counter() - start
    if run.status != BenchRun.Status.DONE:
        sys.exit(f"the run ended {run.status}: {run.error}")
    return elapsed, cpu_shares(before, worker_cpu(procs), elapsed)


def main() -> None:
    args = parse_args()
    with scratch_run_environment(args.database_url, "benchrun_bench") as (env, var_dir, procs):
        from annotate.bench import services
        from annotate.models import Batch, Round
        from evaluation.bench.tables import bench_paper_table

        receivers, providers = create_data(args)
        procs.append(start_bench_worker(env, var_dir, args.concurrency))
        print(f"{args.tasks:,} tasks x {len(receivers)} receivers x {len(providers)} providers x 2 feedback kinds, "
              f"up to 3 rounds; {args.lanes} lanes on {args.concurrency} worker processes; {os.cpu_count()} CPUs",
              flush=True)
        run = services.bench_run_create(batch=Batch.objects.get(name="bench-run"), receivers=receivers,
                                        providers=providers, lanes=args.lanes)
        elapsed, cpu = wait_for_run(run, procs)
        table_start = time.perf_counter()
        table = bench_paper_table(run)
        table_s = time.perf_counter() - table_start
        progress = services.bench_progress(run)
        feedback_rounds = Round.objects.filter(session__bench_run=run, index__gte=1).count()
        model_rounds = progress["round0_calls_needed"] + feedback_rounds  # every round-0 answer + feedback rounds
        print(f"model calls: {progress['model_calls']:,} · feedback sessions: {progress['sessions']:,} · "
              f"model rounds: {progress['round0_calls_needed']:,} round-0 answers + {feedback_rounds:,} feedback "
              "rounds")
        print(f"{model_rounds / elapsed:,.0f} model rounds/s ({model_rounds:,} in {elapsed:.1f} s); "
              f"{progress['model_calls'] / elapsed:,.0f} model calls/s")
        print(f"CPU: {cpu}")
        print(f"time to the first table: {table_s * 1000:.0f} ms after the run ({len(table.rows)} receivers)")


if __name__ == "__main__":
    main()
