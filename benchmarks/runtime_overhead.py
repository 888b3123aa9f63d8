"""App overhead of one round: feedback submit → first streamed chunk at a WebSocket client, minus the
model's own time to first token (Round.first_token_ms, timed by models_runtime from the backend call).

Runs a real stack: Redis (embedded, or REDIS_URL), daphne, one Celery worker (prefork, -c 1, as a model worker
runs), on a fresh SQLite database in a temporary directory (or --database-url, which must be a scratch
database: the benchmark writes users, batches and sessions to it). One annotator logs in with a session
cookie, opens each session's WebSocket and sends feedback rounds 1-3 through the HTTP API, for two backends:

- ``transformers``: the tiny LLaVA-style model built into the temporary directory (real from_pretrained);
- ``openai``: a local OpenAI-protocol SSE server (tests/fake_openai_server.py) in its own process.

Usage:  .venv/bin/python benchmarks/runtime_overhead.py [--rounds 60] [--backends transformers,openai]

It prints p50/p95/max of the overhead and of the raw submit → first chunk time, and where the time goes:
web (POST until the round row exists), dispatch (until the worker claims it: commit, on_commit, broker,
worker pool) and delivery (claim → chunk at the client, less the model's TTFT: request building, channel
layer, daphne). It stops by itself within --budget seconds (default 240).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PASSWORD = "bench-password-1234"
ROUNDS_PER_SESSION = 3  # feedback rounds 1..3 (round 0 answers the bare question: no submit to time)
WARMUP_SESSIONS = 1  # first imports, first connections, model load: not counted


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=60, help="timed rounds per backend (>= 50 for the report)")
    parser.add_argument("--backends", default="transformers,openai")
    parser.add_argument("--budget", type=float, default=240, help="seconds; the run stops itself after this")
    parser.add_argument("--database-url", default="", help="a SCRATCH database (default: SQLite in a temp dir)")
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--openai-delay", type=float, default=0.01, help="the fake server's TTFT, seconds")
    parser.add_argument("--torch-threads", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                        help="OMP_NUM_THREADS of the worker (0: torch's default, every core)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, database)")
    return parser.parse_args()


def configure_environment(var_dir: Path, database_url: str) -> None:
    """Before Django loads settings: a private var dir, no DEBUG, cookies over plain http on 127.0.0.1."""
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "annotate.config.settings",
        "FEEDBACK_LAB_VAR_DIR": str(var_dir),
        "SECRET_KEY": "benchmark-only-secret-key",
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "LOG_LEVEL": "WARNING",
        "STATIC_FROM_FINDERS": "1",
    })
    (var_dir / "staticfiles").mkdir(parents=True, exist_ok=True)
    # Never write benchmark rows into the database of the surrounding environment by accident.
    os.environ.pop("DATABASE_URL", None)
    if database_url:
        os.environ["DATABASE_URL"] = database_url


def start_watchdog(seconds: float, children: list[subprocess.Popen]) -> None:
    """The hard bound: whatever hangs, the processes are ended and the benchmark exits."""

    def expire():
        print(f"\nbenchmark: time budget exceeded ({seconds:.0f} s); stopping", file=sys.stderr, flush=True)
        for child in children:
            if child.poll() is None:
                child.kill()
        os._exit(3)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


# --- the stack -------------------------------------------------------------------------------------------


def start_worker(log: Path, queues: list[str], torch_threads: int) -> subprocess.Popen:
    from tests import stack

    # On a small CPU-only box torch's generation threads would take every core from daphne and Redis; in
    # production the model worker has its own machine (GPU), so give it fewer threads here.
    env = stack.child_env(OMP_NUM_THREADS=str(torch_threads)) if torch_threads else stack.child_env()
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "annotate", "worker", "-Q", ",".join(queues), "-c", "1",
         "--loglevel", "WARNING", "-n", f"bench-{os.getpid()}@%h", "--without-mingle", "--without-gossip"],
        cwd=ROOT, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )


def wait_worker_ready(process: subprocess.Popen, queues: list[str], log: Path, timeout: float = 60) -> None:
    """Ask the worker over the broker which queues it consumes (its log is quiet at WARNING)."""
    from annotate.config.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        replies = app.control.inspect(timeout=1.0).active_queues() or {}
        consumed = {q["name"] for answer in replies.values() for q in answer}
        if set(queues) <= consumed:
            return
    raise RuntimeError(f"the Celery worker did not start; log:\n{log.read_text(errors='replace')[-3000:]}")


def start_fake_openai(delay: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_openai_server", "--model", "bench-model", "--delay", str(delay),
         "--chunk", "Counting ", "--chunk", "the apples ", "--chunk", "again.\n", "--chunk", "Answer: 12"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    base_url = process.stdout.readline().strip()
    if not base_url.startswith("http"):
        raise RuntimeError("the fake OpenAI server did not start")
    return process, base_url


def make_batch(*, name: str, config, sessions: int):
    """An InterFeedback batch with one image task per session; the model always answers wrong."""
    import io

    from PIL import Image

    from annotate.importkit.images import image_store
    from annotate.models import Batch, Task, TaskImage
    from annotate.queue.services import work_items_create_for_batch

    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 40, 40)).save(buffer, format="PNG")
    blob = image_store(data=buffer.getvalue())
    batch = Batch.objects.create(name=name, task_count=sessions)
    for i in range(sessions):
        task = Task.objects.create(batch=batch, external_id=f"{name}-{i}", category="Counting",
                                   question="How many apples are on the table?", answer_type="number",
                                   ground_truth="7391")
        TaskImage.objects.create(task=task, blob=blob, position=0)
    batch.models_to_evaluate.set([config])
    work_items_create_for_batch(batch=batch)
    return batch


# --- the client --------------------------------------------------------------------------------------------


class LiveSession:
    """Reads a session's WebSocket in the background, timestamping the first chunk of each round on arrival."""

    def __init__(self, ws):
        self.ws = ws
        self.snapshot: dict = {}
        self.first_chunk_at: dict[int, float] = {}  # round index -> time.time() on arrival
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._read())

    async def _read(self):
        async for raw in self.ws:
            arrived = time.time()
            event = json.loads(raw)
            if event["type"] == "chunk":
                self.first_chunk_at.setdefault(event["round"], arrived)
            elif event["type"] == "snapshot":
                self.snapshot = event["session"]
                self._changed.set()

    async def wait_for(self, predicate, timeout: float = 90) -> dict:
        deadline = time.monotonic() + timeout
        while not (self.snapshot and predicate(self.snapshot)):
            if self._task.done():
                raise RuntimeError(f"the websocket closed: {self._task.exception()!r}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"session stuck: {self.snapshot.get('status')}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), 2)
            except TimeoutError:
                await self.ws.send(json.dumps({"type": "snapshot"}))  # a missed event: ask for the state
        return self.snapshot

    async def close(self):
        self._task.cancel()
        await self.ws.close()


def round_done(index: int):
    def predicate(snapshot: dict) -> bool:
        rounds = {r["index"]: r for r in snapshot["rounds"]}
        rnd = rounds.get(index)
        return (snapshot["status"] != "generating" and rnd is not None
                and rnd["generation_status"] in ("done", "failed"))
    return predicate


async def log_in(http) -> dict:
    await http.get("/login/")
    response = await http.post("/login/", data={"username": "bench-annotator", "password": PASSWORD,
                                                 "csrfmiddlewaretoken": http.cookies["csrftoken"]})
    if "sessionid" not in http.cookies:
        raise RuntimeError(f"login failed ({response.status_code})")
    return {"X-CSRFToken": http.cookies["csrftoken"]}  # rotated at login: read it after


async def drive(base_url: str, batch_name: str, sessions: int, deadline: float) -> list[dict]:
    import httpx
    import websockets

    samples: list[dict] = []
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        headers = await log_in(http)
        cookie = "; ".join(f"{k}={v}" for k, v in http.cookies.items())
        for number in range(sessions):
            if time.monotonic() > deadline:
                print(f"  budget reached after {number} sessions", flush=True)
                break
            response = await http.post("/api/next/", json={"batch": batch_name}, headers=headers)
            response.raise_for_status()
            session_id = response.json()["session_id"]
            ws = await websockets.connect(f"ws{base_url[4:]}/ws/sessions/{session_id}/",
                                          additional_headers={"Cookie": cookie}, origin=base_url)
            live = LiveSession(ws)
            try:
                snapshot = await live.wait_for(round_done(0))
                for index in range(1, ROUNDS_PER_SESSION + 1):
                    if snapshot["status"] != "awaiting_feedback":
                        break
                    # Words only: a number here would be a stated answer on a number task (the leak warning).
                    body = {"feedback": f"That is not right, count them again ({'once more' if index > 1 else 'please'}).",
                            "client_request_id": str(uuid.uuid4())}
                    submitted = time.time()
                    response = await http.post(f"/api/sessions/{session_id}/feedback/", json=body, headers=headers)
                    responded = time.time()
                    response.raise_for_status()
                    if response.status_code != 201:  # 200: a leak warning, nothing sent
                        raise RuntimeError(f"feedback not sent: {response.text[:200]}")
                    snapshot = await live.wait_for(round_done(index))
                    rnd = next(r for r in snapshot["rounds"] if r["index"] == index)
                    samples.append({"session": session_id, "round": index, "warmup": number < WARMUP_SESSIONS,
                                    "submitted": submitted, "responded": responded,
                                    "first_chunk": live.first_chunk_at.get(index),
                                    "first_token_ms": rnd["first_token_ms"], "status": rnd["generation_status"],
                                    "error": rnd["error"]})
            finally:
                await live.close()
    return samples


# --- figures ---------------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def add_server_timestamps(samples: list[dict]) -> None:
    """Round.created_at (the web transaction made the row) and started_at (the worker claimed it)."""
    from annotate.models import Round

    rows = Round.objects.filter(session_id__in={s["session"] for s in samples}).values_list(
        "session_id", "index", "created_at", "started_at")
    stamps = {(sid, index): (created.timestamp(), started.timestamp()) for sid, index, created, started in rows}
    for sample in samples:
        sample["created"], sample["claimed"] = stamps[(sample["session"], sample["round"])]


def report(backend: str, samples: list[dict]) -> dict:
    timed = [s for s in samples if not s["warmup"] and s["first_chunk"] and s["first_token_ms"] is not None]
    failed = [s for s in samples if s["status"] == "failed"]
    print(f"\n{backend}: {len(timed)} timed rounds ({len(samples) - len(timed)} warm-up or without a chunk"
          f"{f', {len(failed)} failed: ' + failed[0]['error'][:200] if failed else ''})")
    if not timed:
        return {}
    series = {
        "overhead (submit→chunk − model TTFT)": [(s["first_chunk"] - s["submitted"]) * 1000 - s["first_token_ms"]
                                                 for s in timed],
        "raw submit → first chunk": [(s["first_chunk"] - s["submitted"]) * 1000 for s in timed],
        "model TTFT (Round.first_token_ms)": [float(s["first_token_ms"]) for s in timed],
        "  web: submit → round row": [(s["created"] - s["submitted"]) * 1000 for s in timed],
        "  dispatch: row → worker claim": [(s["claimed"] - s["created"]) * 1000 for s in timed],
        "  delivery: claim → chunk − TTFT": [(s["first_chunk"] - s["claimed"]) * 1000 - s["first_token_ms"]
                                             for s in timed],
        "  HTTP response (submit → 201)": [(s["responded"] - s["submitted"]) * 1000 for s in timed],
    }
    width = max(len(name) for name in series)
    print(f"  {'ms'.ljust(width)}  {'p50':>8} {'p95':>8} {'max':>8}")
    for name, values in series.items():
        print(f"  {name.ljust(width)}  {percentile(values, 50):8.1f} {percentile(values, 95):8.1f} "
              f"{max(values):8.1f}")
    overhead = series["overhead (submit→chunk − model TTFT)"]
    return {"p50": percentile(overhead, 50), "p95": percentile(overhead, 95), "n": len(overhead)}


# --- main ------------------------------------------------------------------------------------------------


def main() -> int:
    args = parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = set(backends) - {"transformers", "openai"}
    if unknown:
        sys.exit(f"unknown backend(s): {', '.join(sorted(unknown))}; use transformers and/or openai")
    started = time.monotonic()
    deadline = started + args.budget - 20  # leave time to stop the stack and print
    children: list[subprocess.Popen] = []
    start_watchdog(args.budget + 30, children)
    var_dir = Path(tempfile.mkdtemp(prefix="feedback-lab-bench-"))
    configure_environment(var_dir, args.database_url)

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from annotate.models import ModelConfig, User
    from annotate.server import embedded_redis
    from models_runtime.tiny import build_tiny_llava
    from tests import stack

    results = {}
    try:
        print(f"benchmark dir {var_dir}; database {connection.settings_dict['ENGINE'].rsplit('.', 1)[-1]}; "
              f"redis {'embedded' if settings.EMBEDDED_REDIS else settings.REDIS_URL}", flush=True)
        call_command("migrate", verbosity=0)
        stack.ensure_redis()
        User.objects.create_user(username="bench-annotator", password=PASSWORD, role=User.Role.ANNOTATOR)
        sessions = math.ceil(args.rounds / ROUNDS_PER_SESSION) + WARMUP_SESSIONS
        # Private queue names: a worker of another deployment on the same Redis never takes these rounds.
        prefix = f"bench-{os.getpid()}"
        configs, batches = {}, {}
        generation = {"max_new_tokens": args.max_new_tokens}
        if "transformers" in backends:
            path = build_tiny_llava(var_dir / "tiny-llava")
            configs["transformers"] = ModelConfig.objects.create(
                name="bench-tiny-llava", backend="transformers", backend_settings={"path": path},
                generation=generation, queue=f"{prefix}.transformers")
        if "openai" in backends:
            fake, base = start_fake_openai(args.openai_delay)
            children.append(fake)
            configs["openai"] = ModelConfig.objects.create(
                name="bench-openai", backend="openai", backend_settings={"base_url": base, "model": "bench-model"},
                generation=generation, queue=f"{prefix}.openai")
        for backend, config in configs.items():
            batches[backend] = make_batch(name=f"bench-{backend}", config=config, sessions=sessions)
        connection.close()  # the children open their own connections to the same database

        queues = [config.queue for config in configs.values()] + ["default"]
        worker_log, web_log = var_dir / "worker.log", var_dir / "web.log"
        worker = start_worker(worker_log, queues, args.torch_threads)
        children.append(worker)
        port = stack.free_port()
        web = stack.start_web(web_log, port)
        children.append(web)
        wait_worker_ready(worker, queues, worker_log)
        print(f"stack up in {time.monotonic() - started:.1f} s (daphne :{port}, 1 worker, queues {queues})",
              flush=True)

        for backend in backends:
            share = started + (deadline - started) * (backends.index(backend) + 1) / len(backends)
            samples = asyncio.run(drive(f"http://127.0.0.1:{port}", batches[backend].name, sessions, share))
            add_server_timestamps(samples)
            results[backend] = report(backend, samples)
    finally:
        for child in reversed(children):
            stack.stop(child, timeout=10)
        if settings.EMBEDDED_REDIS:
            embedded_redis.stop(var_dir)
        if args.keep:
            print(f"kept {var_dir}")
        else:
            shutil.rmtree(var_dir, ignore_errors=True)
    print(f"\ntotal {time.monotonic() - started:.1f} s")
    summary = ", ".join(f"{b} p50 {r['p50']:.1f} / p95 {r['p95']:.1f} ms (n={r['n']})" for b, r in results.items() if r)
    print(f"app overhead: {summary}; target p95 <= 50 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
