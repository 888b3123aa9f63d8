"""Preference batch at MM-RLHF's scale: the report's four tables, both raw exports and the study bundle.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_db .venv/bin/python benchmarks/preference_exports.py

Loads (once; reused on later runs unless --fresh) a batch "bench-preference" of --items items with 3 responses by 3
models (positions rotated) and --raters final judgments per item (a ranking with ties sometimes, three scores and a
reason per response): 10,000 items x 3 raters = 30,000 rankings and 90,000 scored responses, about MM-RLHF's 120k
annotations. Then times (--runs runs each, median and max): the preference report (four tables, bootstrap CIs,
alpha and kappa), preference-dpo and preference-responses (jsonl and csv) read to the end, and the study bundle
written to memory; prints each export's size and the peak memory of the process. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotate.config.settings")
os.environ.setdefault("SECRET_KEY", "benchmark-only-secret-key")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from annotate.models import Batch, Conversation, Ranking, Rating, Turn, User  # noqa: E402
from evaluation.exports import registry as exports  # noqa: E402
from evaluation.exports.bundle import bundle_write  # noqa: E402
from evaluation.preference.reports import preference_report  # noqa: E402

BATCH_NAME = "bench-preference"
MODELS = ["model-a", "model-b", "model-c"]
RANKINGS = ["1>2>3", "2>1>3", "1=2>3", "3>1>2", "2>3>1", "1>2=3"]


def load(items: int, raters: int, *, seed: int = 0) -> Batch:
    rng = random.Random(seed)
    batch = Batch.objects.create(name=BATCH_NAME, kind=Batch.Kind.PREFERENCE, overlap=raters, task_count=items)
    people = [User.objects.get_or_create(username=f"bench-rater-{k}", defaults={"pseudonym": f"bench-r{k}"})[0]
              for k in range(raters)]
    with transaction.atomic():
        conversations = Conversation.objects.bulk_create(
            Conversation(batch=batch, external_id=f"item-{i:06d}", position=i, question=f"Question {i}?",
                         metadata={"models": MODELS[i % 3:] + MODELS[:i % 3]}) for i in range(items))
        turns = Turn.objects.bulk_create(
            (Turn(conversation=c, index=k, role=Turn.Role.MODEL, kind=Turn.Kind.CANDIDATE, is_rateable=True,
                  text=f"Response {k + 1} to {c.external_id}: " + "words " * 40)
             for c in conversations for k in range(3)), batch_size=5000)
        Ranking.objects.bulk_create(
            (Ranking(conversation=c, annotator=p, ranking=rng.choice(RANKINGS), is_final=True, client_request_id="b")
             for c in conversations for p in people), batch_size=5000)
        Rating.objects.bulk_create(
            (Rating(turn=t, annotator=p, helpfulness=rng.randint(1, 5), faithfulness=rng.randint(1, 5),
                    ethics=rng.randint(3, 5), comment="A reason of a few words.", is_final=True,
                    client_request_id="b")
             for t in turns for p in people), batch_size=5000)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # What autovacuum does soon after a bulk change. Without statistics the exports' server-side cursors got
            # nested-loop plans: 43 s instead of 0.4 s for the 90,000 scores of 10,000 items.
            cursor.execute("ANALYZE")
    return batch


def timed(what: str, runs: int, work) -> None:
    seconds, size = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        size = work()
        seconds.append(time.perf_counter() - started)
    print(f"{what:<34} median {statistics.median(seconds):6.2f} s  max {max(seconds):6.2f} s  {size / 1e6:8.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--raters", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fresh", action="store_true", help="delete and load the batch again")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    batch = Batch.objects.filter(name=BATCH_NAME).first()
    if batch is not None and (args.fresh or batch.task_count != args.items or batch.overlap != args.raters):
        batch.delete()
        batch = None
    if batch is None:
        started = time.perf_counter()
        batch = load(args.items, args.raters)
        print(f"loaded {args.items:,} items x {args.raters} raters in {time.perf_counter() - started:.1f} s")
    print(f"{args.items:,} items, {Ranking.objects.filter(conversation__batch=batch).count():,} rankings, "
          f"{Rating.objects.filter(turn__conversation__batch=batch).count():,} scored responses; {args.runs} runs")

    def read(name: str, fmt: str) -> int:
        return len(exports.build_export(batch, name, fmt).read())

    def bundle() -> int:
        buffer = io.BytesIO()
        bundle_write(batch, buffer)
        return buffer.tell()

    timed("report (4 tables, 2,000 resamples)", args.runs, lambda: len(str(preference_report(batch).as_dict())))
    timed("preference-dpo.jsonl", args.runs, lambda: read("preference-dpo", "jsonl"))
    timed("preference-responses.jsonl", args.runs, lambda: read("preference-responses", "jsonl"))
    timed("preference-responses.csv", args.runs, lambda: read("preference-responses", "csv"))
    timed("study bundle (zip, in memory)", args.runs, bundle)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory {peak_mb:,.0f} MB")


if __name__ == "__main__":
    main()
