"""What one annotator's requests cost the app, in process: CPU time of the request's thread and queries, for a
newcomer's first item, a returning annotator's next item, a draft autosave and a submit.

Usage:
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/next_item_cost.py
  ... --tasks 100000 --cycles 300 --newcomers 50

Each request goes through Django's test client with an API token (as the load clients send it), so the figures
are the app's alone: no server, no network, no other process's load. The database is a scratch one next to the
given one (``<name>_item_cost``, dropped at the end); round 0 is dispatched to an embedded Redis that no worker
reads, so no model runs in the measured thread. Queries are counted as Django logs them (BEGIN and COMMIT
included). The script uses the app's public entry points only, so it runs unchanged on an older tree of the
project: copy it there to compare two trees in one sitting (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.figures import percentile, reference_workload_ms, speed_before_and_after  # noqa: E402
from benchmarks.machine_cpu import process_cpu_ms  # noqa: E402
from benchmarks.queue_load import scratch_setup, tear_down  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--cycles", type=int, default=300, help="items one returning annotator walks through")
    parser.add_argument("--newcomers", type=int, default=50, help="people whose first item is measured")
    return parser.parse_args()


def create_data(n_tasks: int, n_people: int):
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from annotate.models import Batch, ModelConfig, Task, User
    from annotate.queue.services import work_items_create_for_batch

    call_command("migrate", verbosity=0)
    model = ModelConfig.objects.create(name="cost-sim", backend=ModelConfig.Backend.SIMULATED,
                                       backend_settings={"chunk_delay": 0})
    batch = Batch.objects.create(name="item-cost", max_rounds=1, overlap=1, task_count=n_tasks)
    batch.models_to_evaluate.add(model)
    Task.objects.bulk_create((Task(batch=batch, external_id=f"t{i:06d}", category="Visual Logic",
                                   question=f"How many objects are in picture {i}?",
                                   answer_type=Task.AnswerType.NUMBER, ground_truth=str(i % 977), source="cost")
                              for i in range(n_tasks)), batch_size=5000)
    work_items_create_for_batch(batch=batch)
    users = User.objects.bulk_create(User(username=f"cost-{i:04d}", pseudonym=f"cost-{i:04d}",
                                          role=User.Role.ANNOTATOR, password="!") for i in range(n_people))
    tokens = Token.objects.bulk_create(Token(key=Token.generate_key(), user=user) for user in users)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return [token.key for token in tokens]


def database_backend_pid() -> int:
    """The PostgreSQL backend serving this process's connection (the requests run in this thread)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


class Meter:
    """CPU ms of this thread, CPU ms of the database backend serving it, and queries (as Django logs them) of each
    request, by kind."""

    def __init__(self):
        self.backend_pid = database_backend_pid()
        self.cpu: dict[str, list[float]] = {}
        self.queries: dict[str, list[int]] = {}
        self.db_cpu: dict[str, list[float]] = {}

    def post(self, kind: str, client, path: str, payload: dict):
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        db_start = process_cpu_ms(self.backend_pid)
        with CaptureQueriesContext(connection) as queries:
            start = time.thread_time()
            response = client.post(path, payload, format="json")
            cpu = (time.thread_time() - start) * 1000
        db_cpu = process_cpu_ms(self.backend_pid) - db_start
        self.cpu.setdefault(kind, []).append(cpu)
        self.db_cpu.setdefault(kind, []).append(db_cpu)
        self.queries.setdefault(kind, []).append(len(queries))
        return response

    def print(self) -> None:
        print(f"  {'request':<34}{'n':>6}{'CPU p50':>9}{'CPU p95':>9}{'DB mean':>9}{'queries':>9}   (ms of CPU: the "
              f"app's thread, and the database's backend)")
        for kind, cpu in self.cpu.items():
            counts, db_cpu = self.queries[kind], self.db_cpu[kind]
            shown = str(max(counts)) if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"
            print(f"  {kind:<34}{len(cpu):>6}{percentile(cpu, 0.5):>9.1f}{percentile(cpu, 0.95):>9.1f}"
                  f"{sum(db_cpu) / len(db_cpu):>9.2f}{shown:>9}")


def walk(tokens: list[str], cycles: int) -> Meter:
    from rest_framework.test import APIClient

    from annotate.assignments import assignment_complete
    from annotate.models import Round, Session

    meter = Meter()

    def client_of(token: str) -> APIClient:
        client = APIClient(SERVER_NAME="localhost")  # one of ALLOWED_HOSTS
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        return client

    for token in tokens[1:]:
        client = client_of(token)
        response = meter.post("POST /api/next/, a newcomer", client, "/api/next/", {})
        assert response.status_code == 200 and response.json()["state"] == "item", response.content
    client = client_of(tokens[0])
    for n in range(cycles):
        kind = "POST /api/next/, a newcomer" if n == 0 else "POST /api/next/, returning"
        response = meter.post(kind, client, "/api/next/", {})
        assert response.status_code == 200 and response.json()["state"] == "item", response.content
        session_id = response.json()["session_id"]
        # The model's answer to round 0, as the worker would write it (outside the measure).
        Round.objects.filter(session_id=session_id).update(generation_status=Round.Generation.DONE, answer_text="1",
                                                           final_verdict=False, auto_verdict=False)
        Session.objects.filter(pk=session_id).update(status=Session.Status.AWAITING_FEEDBACK)
        url = f"/api/sessions/{session_id}/"
        meter.post("POST .../draft/", client, url + "draft/", {"draft": "Count"})
        response = meter.post("POST .../feedback/ (submit)", client, url + "feedback/",
                              {"feedback": "Count again.", "client_request_id": f"c{n}"})
        assert response.status_code == 201, response.content
        Session.objects.filter(pk=session_id).update(status=Session.Status.COMPLETED)
        assignment_complete(assignment_id=Session.objects.get(pk=session_id).assignment_id)
    return meter


def main() -> None:
    args = parse_args()
    _, scratch, _, var_dir = scratch_setup(args.database_url, "item_cost", "_item_cost")
    from django.conf import settings

    from annotate.server import embedded_redis

    embedded_redis.ensure_running(settings.VAR_DIR)
    try:
        tokens = create_data(args.tasks, args.newcomers + 1)
        speed = reference_workload_ms()
        meter = walk(tokens, args.cycles)
        print(f"{args.tasks:,} tasks, one simulated model; {speed_before_and_after(speed)}")
        meter.print()
    finally:
        tear_down([], var_dir, args.database_url, scratch)


if __name__ == "__main__":
    main()
