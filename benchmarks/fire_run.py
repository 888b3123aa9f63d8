"""FIRE free dialogues run by the app, end to end through Celery, with replay models: dialogues per second.

Usage:
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/fire_run.py \\
      [--conversations 5000] [--lanes 4] [--concurrency 2]

What runs: a scratch PostgreSQL database (``<name>_firerun_bench``, dropped at the end), an embedded Redis, one
Celery worker on the ``bench`` queue, and a free-dialogue run of one student and one teacher (replay models, no
per-chunk delay) on ``--conversations`` FIRE conversations: the teacher's replayed scores rise to 8 or more within
one to five turns, or stall. What is measured is the orchestration: the dialogues' turns, their rows, the lanes.

Prints: dialogues and turns written, ``N dialogues/s`` (from the start to the run's end), the CPU split (worker,
this process, whole machine: PostgreSQL's backends of ended lanes drop out of its own reading) and the time to the
tables (Tables 4 and 5 from the finished run's rows).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_run import scratch_run_environment, start_bench_worker, wait_for_run  # noqa: E402

SOURCES = ["chartqa", "seedbench", "mathverse", "docvqa"]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=5000)
    parser.add_argument("--lanes", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes on the bench queue")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    return parser.parse_args()


def create_data(n: int):
    from django.core.management import call_command

    from annotate.models import Batch, Conversation, ModelConfig

    call_command("migrate", verbosity=0)
    rng = random.Random(11)
    for name in ("student", "teacher"):
        ModelConfig.objects.create(name=name, backend=ModelConfig.Backend.REPLAY, backend_settings={"chunk_delay": 0})
    batch = Batch.objects.create(name="fire-run", kind=Batch.Kind.FIRE, status=Batch.Status.READY, task_count=n)
    conversations = []
    for i in range(n):
        start = rng.randint(1, 6)
        scores = [min(10, start + step * rng.choice([0, 1, 2, 3])) for step in range(5)]
        recorded = {"student": [f"Thought: try {k}.\nAnswer: {k}" for k in range(5)],
                    "teacher": [f"Score: {s}\nFeedback: look again at part {k}." for k, s in enumerate(scores)]}
        conversations.append(Conversation(batch=batch, external_id=f"c{i:05d}", position=i,
                                          question=f"What is shown in chart {i}?", ground_truth=str(i % 7),
                                          source=SOURCES[i % len(SOURCES)], split="fire_test",
                                          metadata={"recorded_answers": recorded}))
    Conversation.objects.bulk_create(conversations, batch_size=2000)
    return batch


def main() -> None:
    args = parse_args()
    with scratch_run_environment(args.database_url, "firerun_bench") as (env, var_dir, procs):
        from annotate.bench import services
        from annotate.models import FireRunTurn
        from evaluation.fire.runs import free_tables

        batch = create_data(args.conversations)
        procs.append(start_bench_worker(env, var_dir, args.concurrency))
        print(f"{args.conversations:,} FIRE conversations, 1 student x 1 teacher, free dialogues (n_max 5); "
              f"{args.lanes} lanes on {args.concurrency} worker processes; {os.cpu_count()} CPUs", flush=True)
        run = services.fire_run_create(batch=batch, protocol="fire_free", students="student", teachers="teacher",
                                       lanes=args.lanes)
        elapsed, cpu = wait_for_run(run, procs)
        table_start = time.perf_counter()
        table4, table5 = free_tables(run)
        table_s = time.perf_counter() - table_start
        turns = FireRunTurn.objects.filter(run=run).count()
        print(f"dialogues: {args.conversations:,} · turns written: {turns:,}")
        print(f"{args.conversations / elapsed:,.0f} dialogues/s ({elapsed:.1f} s); {turns / elapsed:,.0f} turns/s")
        print(f"CPU: {cpu}")
        print(f"time to the tables: {table_s * 1000:.0f} ms after the run (Table 4: {table4.rows[0][3:]}; "
              f"Table 5: {len(table5.rows)} sources)")


if __name__ == "__main__":
    main()
