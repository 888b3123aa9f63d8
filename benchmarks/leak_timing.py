"""Does the leak warning take longer when the stated answer is right? (It must not: the warning would tell.)

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/leak_timing.py --runs 300

Creates a scratch test database (Django's, dropped at the end), two number tasks each answered by an annotator, and
times ``POST /api/sessions/<id>/feedback/`` through the Django test client, alternating feedback that states
the right answer and feedback of the same shape that states a wrong one (both answered with a 200 warning, nothing
sent; each text is right for one task and wrong for the other). Prints p50/p95 of each and their difference; asserts nothing. Every warning
is padded to ``LEAK_WARNING_MS``: set it to 0 to see the work behind it.
"""

from __future__ import annotations

import argparse
import logging
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
os.environ.setdefault("LOG_LEVEL", "ERROR")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from annotate.models import Batch, ModelConfig, Round, Session, Task, User  # noqa: E402


def session_awaiting_feedback(batch: Batch, task: Task, model: ModelConfig, username: str) -> tuple[User, Session]:
    user = User.objects.create_user(username=username, password="x", role=User.Role.ANNOTATOR)
    session = Session.objects.create(batch=batch, task=task, model_config=model, annotator=user,
                                     status=Session.Status.AWAITING_FEEDBACK)
    Round.objects.create(session=session, index=0, generation_status=Round.Generation.DONE, answer_text="Answer: 12",
                         auto_verdict=False, final_verdict=False, verdict_source=Round.VerdictSource.AUTO)
    return user, session


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="requests of each kind")
    args = parser.parse_args()
    setup_test_environment()
    logging.getLogger("django.request").setLevel(logging.ERROR)
    test_db = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        batch = Batch.objects.create(name="bench-leak-timing")
        model = ModelConfig.objects.create(name="bench-sim", backend="simulated")
        # Two sessions on two tasks and two texts, each text right for one task and wrong for the other: "right"
        # and "wrong" then use the same sessions, users and texts equally often, so only the correctness differs
        # (a first version, one session per kind, measured ~0.3 ms between the two sessions themselves).
        sessions = []
        for number, answer in enumerate(("7391", "7395")):
            task = Task.objects.create(batch=batch, external_id=f"t{number}", category="Math",
                                       question="How many dots?", answer_type=Task.AnswerType.NUMBER,
                                       ground_truth=answer)
            user, session = session_awaiting_feedback(batch, task, model, f"annotator{number}")
            client = Client()
            client.force_login(user)
            sessions.append((client, session))
        texts = ("Is it 7390, 7391 or 7392?", "Is it 7394, 7395 or 7396?")  # right for the first / second task
        pairs = {"right": [(sessions[0], texts[0]), (sessions[1], texts[1])],
                 "wrong": [(sessions[0], texts[1]), (sessions[1], texts[0])]}
        times: dict[str, list[float]] = {kind: [] for kind in pairs}
        for run in range(args.runs + 20):  # the first 20 of each warm up
            for kind in (("right", "wrong") if run % 2 else ("wrong", "right")):
                (client, session), text = pairs[kind][(run // 2) % 2]
                started = time.perf_counter()
                response = client.post(f"/api/sessions/{session.id}/feedback/",
                                       {"feedback": text, "client_request_id": f"r{run}"},
                                       content_type="application/json")
                elapsed = (time.perf_counter() - started) * 1000
                if response.status_code != 200 or response.json().get("code") != "ground_truth_leak":
                    raise SystemExit(f"expected a 200 leak warning, got {response.status_code}: "
                                     f"{response.content[:200]!r}")
                if run >= 20:
                    times[kind].append(elapsed)
        print(f"database: {connection.vendor}; {args.runs} requests of each kind, interleaved")
        for kind, values in times.items():
            print(f"  {kind:5}  p50 {statistics.median(values):6.2f} ms   p95 {percentile(values, 0.95):6.2f} ms")
        print(f"  p50 difference right - wrong: "
              f"{statistics.median(times['right']) - statistics.median(times['wrong']):+.2f} ms")
    finally:
        connection.creation.destroy_test_db(test_db, verbosity=0)


if __name__ == "__main__":
    main()
