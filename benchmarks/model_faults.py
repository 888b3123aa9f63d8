"""A rate-limited model server and 50 waiting annotators: does the one retry layer hold back, and recover at once?

A local OpenAI-compatible server (tests/fake_openai_server.py, real HTTP in a thread) answers every request with
429 and a ``Retry-After`` for ``--outage`` seconds (20), then answers normally. ``--annotators`` rounds (50) are
started over the first ``--arrivals`` seconds (2) of the outage, each from a thread of its own, all through ONE
shared ``openai`` backend, as the threads of a model worker share theirs (models_runtime.registry). Each round is
``backend.stream(request).collect()``, the call ``annotate.sessions.generation.round_generate`` makes, with the
backend's own RetryPolicy (the only retry layer: the Celery task does not retry model errors).

It drives the backend directly, not the Celery path: 50 worker threads and their heartbeat threads would hold ~100
PostgreSQL connections, the whole server's limit on the shared machine this was written on. What the Celery path
adds (one claim per round, a failure with Retry instead of a task retry) is tested in
tests/annotate/sessions/test_model_errors.py.

``--retry-after window`` (default): the server sends the seconds left in its window, rounded up, as rate limiters
with a known reset do. ``--retry-after 5``: a fixed value, shorter than the outage (the budget then ends rounds).

Prints: requests per round during the outage (target <= 3), time from recovery to the first answered round
(target <= 5 s) and rounds answered / failed with Retry / lost / left running (target: 0 lost, 0 running).
Exit status 1 when a target is missed.

Usage:  .venv/bin/python benchmarks/model_faults.py [--annotators 50] [--outage 20] [--retry-after window|SECONDS]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from models_runtime import Message, ModelError, ModelRequest  # noqa: E402
from models_runtime.backends.openai import OpenAIBackend  # noqa: E402
from tests.fake_openai_server import FakeOpenAI, serving  # noqa: E402

ROUND_TAG = re.compile(r"\[round (\d+)\]")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotators", type=int, default=50, help="rounds waiting on the model at once")
    parser.add_argument("--outage", type=float, default=20.0, help="seconds of 429 from the first round on")
    parser.add_argument("--arrivals", type=float, default=2.0, help="rounds start spread over these seconds")
    parser.add_argument("--retry-after", default="window", help='"window" (seconds left) or fixed seconds')
    parser.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE",
                        help="an openai backend setting (max_retries, retry_budget, backoff_base, ...); repeat")
    return parser.parse_args()


def backend_settings(base_url: str, pairs: list[str]) -> dict:
    settings: dict = {"base_url": base_url, "model": "bench-model", "read_timeout": 30}
    for pair in pairs:
        key, _, value = pair.partition("=")
        settings[key] = float(value) if "." in value else int(value)
    return settings


def run_round(backend: OpenAIBackend, index: int, start_at: float, outcomes: dict) -> None:
    time.sleep(max(0.0, start_at - time.monotonic()))
    request = ModelRequest(messages=(Message.text("user", f"[round {index}] How many apples are on the table?"),))
    began = time.monotonic()
    try:
        result = backend.stream(request).collect()
        outcomes[index] = {"status": "answered", "began": began, "ended": time.monotonic(), "text": result.text}
    except ModelError as error:
        outcomes[index] = {"status": "failed", "began": began, "ended": time.monotonic(),
                           "error": f"{type(error).__name__}: {error}"}
    except Exception as error:  # a bug, not a model error: counted as lost
        outcomes[index] = {"status": "lost", "began": began, "ended": time.monotonic(), "error": repr(error)}


def main() -> int:
    args = parse_args()
    fake = FakeOpenAI(model="bench-model", chunks=["Counting ", "the apples ", "again.\n", "Answer: 12"])
    if args.retry_after != "window":
        fake.retry_after = str(float(args.retry_after)).removesuffix(".0")
    outcomes: dict[int, dict] = {}
    with serving(fake) as server:
        backend = OpenAIBackend(backend_settings(server.base_url, args.setting))
        policy = backend.retry_policy
        started = time.monotonic()
        server.rate_limited_until = recovery = started + args.outage
        threads = []
        for index in range(args.annotators):
            start_at = started + args.arrivals * index / max(1, args.annotators - 1)
            thread = threading.Thread(target=run_round, args=(backend, index, start_at, outcomes), daemon=True)
            thread.start()
            threads.append(thread)
        give_up_at = started + args.arrivals + policy.total_seconds + 30
        for thread in threads:
            thread.join(timeout=max(0.0, give_up_at - time.monotonic()))
        running = sum(thread.is_alive() for thread in threads)
        requests = list(server.requests)
        backend.close()

    per_round_outage: Counter[int] = Counter()
    per_round_all: Counter[int] = Counter()
    for request in requests:
        tag = ROUND_TAG.search(request["body"]["messages"][0]["content"])
        if tag:
            round_index = int(tag.group(1))
            per_round_all[round_index] += 1
            if request["at"] < recovery:
                per_round_outage[round_index] += 1
    during = [per_round_outage[i] for i in range(args.annotators)]
    total = [per_round_all[i] for i in range(args.annotators)]
    answered = sorted(o["ended"] for o in outcomes.values() if o["status"] == "answered")
    failed = [o for o in outcomes.values() if o["status"] == "failed"]
    lost = [o for o in outcomes.values() if o["status"] == "lost"]

    retry_after = "seconds left in the window" if args.retry_after == "window" else f"{fake.retry_after} s"
    print(f"model_faults: {args.annotators} rounds through one shared openai backend (threads, not Celery), "
          f"started over {args.arrivals:g} s; the server answers 429 for {args.outage:g} s "
          f"(Retry-After: {retry_after})")
    print(f"  policy: {policy}")
    print(f"  requests during the outage: {sum(during)} in all; per round max {max(during)}, "
          f"mean {statistics.mean(during):.2f}, distribution {dict(sorted(Counter(during).items()))} "
          f"(target <= 3)")
    print(f"  requests per round in all: max {max(total)}, mean {statistics.mean(total):.2f}")
    if answered:
        print(f"  recovery -> first answered round: {answered[0] - recovery:.2f} s (target <= 5 s); "
              f"-> median {statistics.median(answered) - recovery:.2f} s, last {answered[-1] - recovery:.2f} s")
    else:
        print("  recovery -> first answered round: none answered")
    print(f"  rounds: {len(answered)} answered, {len(failed)} failed with Retry, "
          f"{len(lost) + args.annotators - len(outcomes) - running} lost, {running} left running")
    if failed:
        print(f"  first failure: {failed[0]['error'][:300]}")
    if lost:
        print(f"  first lost round: {lost[0]['error'][:300]}")

    ok = (max(during) <= 3 and running == 0 and not lost and len(outcomes) == args.annotators
          and bool(answered) and answered[0] - recovery <= 5)
    print("  targets:", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
