"""The next-item query with the repeated-task rule on PostgreSQL: its plan and its time, for an annotator with a long
history, in a batch that allows repeats and one that does not.

Usage:
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/queue_repeat_plan.py
  ... --tasks 20000 --models 3 --annotators 100 --history 300

Creates a scratch database (``<name>_repeat_plan``, dropped at the end unless ``--keep``), a batch of tasks x
models with K = 3, and ``--annotators`` annotators who each had ``--history`` sessions (a third of them with the
answer revealed); then prints EXPLAIN ANALYZE of the statement that picks the next item for the first of them, whose
history is the tasks at the head of the queue with another model (the worst case: the walk steps over all of
them), and the
median and p95 of its execution time over ``--runs`` runs (the server's own figure, no client round trip).
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

from benchmarks.figures import percentile  # noqa: E402
from benchmarks.queue_load import _admin, analyze, scratch_setup  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--annotators", type=int, default=100)
    parser.add_argument("--history", type=int, default=300, help="sessions each annotator already had")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--keep", action="store_true")
    return parser.parse_args()


def create_data(args) -> None:
    from django.core.management import call_command
    from django.db import transaction
    from django.utils import timezone

    from annotate.models import Assignment, Batch, ModelConfig, Session, Task, User, WorkItem
    from annotate.queue.services import work_items_create_for_batch

    call_command("migrate", verbosity=0)
    rng = random.Random(7)
    with transaction.atomic():
        models = [ModelConfig.objects.create(name=f"plan-model-{i}", backend="simulated") for i in range(args.models)]
        batch = Batch.objects.create(name="repeat-plan", overlap=3, task_count=args.tasks)
        batch.models_to_evaluate.set(models)
        Task.objects.bulk_create([Task(batch=batch, external_id=f"t{i}", category="Visual Logic", question="?",
                                       answer_type="number", ground_truth="1") for i in range(args.tasks)],
                                 batch_size=5000)
        work_items_create_for_batch(batch=batch)
        items = list(WorkItem.objects.filter(batch=batch).values_list("id", "task_id", "model_config_id"))
        now = timezone.now()
        for n in range(args.annotators):
            user = User.objects.create(username=f"plan-{n:04d}", role=User.Role.ANNOTATOR)
            # The annotator explained (the first) had the tasks at the head of the queue with another model: the
            # walk steps over each of them (items are made model-major and served in id order).
            mine = items[args.tasks:args.tasks + args.history] if n == 0 else rng.sample(items, args.history)
            assignments = Assignment.objects.bulk_create([
                Assignment(work_item_id=item_id, annotator=user, status=Assignment.Status.COMPLETED,
                           lease_expires_at=now) for item_id, _, _ in mine])
            Session.objects.bulk_create([
                Session(batch=batch, task_id=task_id, model_config_id=model_id, annotator=user, assignment=a,
                        status=Session.Status.COMPLETED, completed_at=now, revealed_at=now if i % 3 == 0 else None)
                for i, ((_, task_id, model_id), a) in enumerate(zip(mine, assignments, strict=True))])
    analyze()


def explain(batch, annotator, runs: int) -> None:
    """EXPLAIN ANALYZE of the reservation's walk for ``annotator`` (the queryset the queue locks its next item
    from, through Django's public ``QuerySet.explain``), then its execution time over ``runs`` runs."""
    import json

    from django.db import transaction

    from annotate.models import Assignment
    from annotate.queue.items import batch_items

    last_task_id = (Assignment.objects.filter(annotator=annotator).order_by("-created_at")
                    .values_list("work_item__task_id", flat=True).first())
    items = batch_items(batch, annotator.pk, last_task_id=last_task_id).select_for_update(
        skip_locked=True, of=("self",))[:1]
    with transaction.atomic():
        print(items.explain(analyze=True, buffers=True))
        times = [json.loads(items.explain(format="json", analyze=True))[0]["Execution Time"] for _ in range(runs)]
    print(f"execution time over {runs} runs: p50 {percentile(times, 0.5):.3f} ms, p95 {percentile(times, 0.95):.3f} ms")


def main() -> None:
    args = parse_args()
    _, scratch, _, _ = scratch_setup(args.database_url, "repeat_plan", "_repeat_plan")
    try:
        t0 = time.perf_counter()
        create_data(args)
        print(f"setup: {args.tasks:,} tasks x {args.models} models, {args.annotators} annotators x "
              f"{args.history} sessions in {time.perf_counter() - t0:.0f} s")
        from annotate.models import Batch, User

        batch = Batch.objects.get(name="repeat-plan")
        annotator = User.objects.get(username="plan-0000")
        for repeats in (False, True):
            Batch.objects.filter(pk=batch.pk).update(allow_repeat_tasks=repeats)
            batch.refresh_from_db()
            print(f"\n--- allow_repeat_tasks={repeats} ---")
            explain(batch, annotator, args.runs)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            _admin(args.database_url, f'DROP DATABASE IF EXISTS "{scratch}"')


if __name__ == "__main__":
    main()
