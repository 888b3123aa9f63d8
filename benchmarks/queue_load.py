"""Next-item and submit latency under load (SPEC §7, issue 4), over HTTP against a real ASGI server on PostgreSQL.

Targets: p95 <= 30 ms for one annotator walking the queue (Label Studio's next-task API with 100k tasks on this
machine: p50 202 ms, p95 294 ms); p95 <= 50 ms and 0 errors with 200 annotators at once.

Usage:
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/queue_load.py
  ... --pool 8          connections per web process in Django's PostgreSQL pool (0: one per request)
  ... --reuse           reuse the data a --keep run left (skips the ~1 min setup)

What it does:
  1. Creates a scratch database next to the given one (``<name>_queue_bench``, dropped at the end unless
     ``--keep``; ``--in-place`` uses the given database), migrates it, and bulk-creates a batch of 100k tasks x 1
     simulated model (max_rounds = 1, overlap 1), its 100k work items, and 1 + 200 annotators with API tokens and
     login sessions.
  2. Starts the ASGI app (uvicorn with ``--web-workers`` processes; daphne when uvicorn is not installed) and one
     Celery worker (simulated model, no delay; at SCHED_IDLE priority, standing in for model servers on other
     machines) on an embedded Redis, as in production: a submit saves the round and dispatches the model call on
     commit; the worker answers, streams over the channel layer and completes the session.
  3. Phase 1, one annotator, no pauses: POST /api/next/ (reserves a new pair: the session starts and round 0 is
     queued), wait for the model's answer on the session's WebSocket (as the page does; ``--wait poll`` polls
     GET /api/sessions/<id>/ instead), POST /api/sessions/<id>/feedback/ (the submit), wait until the session
     completes (round 1 is the last: the model is told the answer); repeat.
  4. Phase 2, 200 annotators at once (asyncio + aiohttp), the same loop with human pauses: typing the
     feedback takes ``--think`` seconds on average (0.5x-1.5x), with the page's draft autosaves every 1.5-3 s, and
     reading the outcome as long again; starts spread over ``--ramp`` s.
  Each phase is bounded in time (``--seconds``). It prints p50/p95/p99/max of next-item and submit (and of the
  WebSocket connects, polls and draft saves), the request rate and the error count (unexpected statuses, exceptions, sessions
  that did not advance within 30 s); the app's own share of next and submit (``Server-Timing``); in phase 2,
  next-item split into each annotator's first item (all 200 arrive within the ramp) and the later ones; and the CPU
  each part of the system used.

Latencies are measured by the client, so they include HTTP, the server's queueing and the client's event loop.
Everything (PostgreSQL, the web processes, the worker and the client) shares this machine's CPUs, so other work on
the machine shows in the figures: the load average is printed before and after each phase.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.figures import percentile, reference_workload_ms  # noqa: E402

BATCH_NAME = "queue-load"
QUIET_SECONDS = 10.0  # as SNAPSHOT_AFTER_QUIET_MS in static/js/session.js
CATEGORIES = ["Visual Logic", "Mathematical Logic", "MMMU-Pro", "MathVerse", "Math (Text)", "Coding (Text)"]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--in-place", action="store_true", help="use the given database itself (not a scratch one)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse the scratch database a --keep run left (skips the data setup; implies --keep)")
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60, help="time bound of each phase")
    parser.add_argument("--single-cycles", type=int, default=1000, help="phase 1 stops after this many items")
    parser.add_argument("--think", type=float, default=15.0,
                        help="phase 2: mean time (s) to type the feedback (with draft autosaves) and to read the "
                             "outcome before the next item")
    parser.add_argument("--ramp", type=float, default=15.0, help="phase 2: annotators start over this many s")
    parser.add_argument("--wait", choices=["ws", "poll"], default="ws",
                        help="how a client waits for the model: the session's WebSocket (as the page does) or "
                             "GET /api/sessions/<id>/ every 1.5 s (the page's fallback)")
    parser.add_argument("--web-workers", type=int, default=max(2, os.cpu_count() or 2), help="ASGI processes")
    parser.add_argument("--celery-concurrency", type=int, default=2)
    parser.add_argument("--pool", type=int, default=8,
                        help="DB_POOL_MAX_SIZE of the web processes: Django's PostgreSQL connection pool, this many "
                             "connections per process (0: a new connection per request)")
    parser.add_argument("--server", choices=["uvicorn", "daphne"], default="uvicorn",
                        help="the ASGI server (daphne runs one process)")
    parser.add_argument("--phase", choices=["both", "single", "many"], default="both")
    parser.add_argument("--explain", action="store_true", help="print the plan of the next-item query at the end")
    return parser.parse_args()


# --- database and data ---------------------------------------------------------------------------------------------


def scratch_database(url: str, in_place: bool, reuse: bool = False,
                     suffix: str = "_queue_bench") -> tuple[str, str | None]:
    """(database URL to use, name of the scratch database to drop at the end or None)."""
    parts = urlsplit(url)
    if not parts.scheme.startswith("postgres"):
        sys.exit("this benchmark needs PostgreSQL: DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres")
    if in_place:
        return url, None
    name = parts.path.lstrip("/") + suffix
    if reuse:
        return urlunsplit(parts._replace(path="/" + name)), name
    _admin(url, f'DROP DATABASE IF EXISTS "{name}"')
    _admin(url, f'CREATE DATABASE "{name}"')
    return urlunsplit(parts._replace(path="/" + name)), name


def _admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql)


def configure(database_url: str, var_dir: Path) -> dict:
    env = {
        "DATABASE_URL": database_url,
        "SECRET_KEY": "queue-load-benchmark-only",
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "FEEDBACK_LAB_VAR_DIR": str(var_dir),
        "LOG_LEVEL": "WARNING",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "DJANGO_SETTINGS_MODULE": "annotate.config.settings",
        "PYTHONUNBUFFERED": "1",
    }
    os.environ.update(env)
    os.environ.pop("REDIS_URL", None)  # an embedded Redis of our own in var_dir
    import django

    django.setup()
    return {**os.environ}


def create_data(n_tasks: int, n_annotators: int, reuse: bool) -> tuple[str, list[str]]:
    from django.core.management import call_command
    from django.db import transaction
    from rest_framework.authtoken.models import Token

    from annotate.models import Batch, ModelConfig, Task, User
    from annotate.queue.services import work_items_create_for_batch

    t0 = time.perf_counter()
    call_command("migrate", verbosity=0)  # a reused database gets the migrations made since
    if reuse:
        from datetime import timedelta

        from django.utils import timezone

        from annotate.assignments import assignments_expire

        # Items a previous run left reserved go back to the pool; its annotators start afresh.
        assignments_expire(now=timezone.now() + timedelta(days=1))
        tokens = Token.objects.filter(user__username__startswith="bench-").order_by("user__username")
        analyze()
        print(f"setup: reusing {BATCH_NAME!r} ({Batch.objects.get(name=BATCH_NAME).work_items.count():,} items)")
        return BATCH_NAME, _credentials(list(tokens.select_related("user"))[: n_annotators + 1])

    t1 = time.perf_counter()
    with transaction.atomic():
        model = ModelConfig.objects.create(name="bench-sim", backend=ModelConfig.Backend.SIMULATED,
                                           backend_settings={"chunk_delay": 0})
        batch = Batch.objects.create(name=BATCH_NAME, max_rounds=1, overlap=1, task_count=n_tasks)
        batch.models_to_evaluate.add(model)
        Task.objects.bulk_create(
            (Task(batch=batch, external_id=f"t{i:06d}", category=CATEGORIES[i % len(CATEGORIES)],
                  question=f"How many objects are in picture {i}?", answer_type=Task.AnswerType.NUMBER,
                  ground_truth=str(1000 + i % 977), source="queue-load") for i in range(n_tasks)),
            batch_size=5000,
        )
        t2 = time.perf_counter()
        items = work_items_create_for_batch(batch=batch)
    t3 = time.perf_counter()
    users = [User(username=f"bench-{i:04d}", pseudonym=f"bench-{i:04d}", role=User.Role.ANNOTATOR, password="!")
             for i in range(n_annotators + 1)]
    User.objects.bulk_create(users, batch_size=1000)
    users = list(User.objects.filter(username__startswith="bench-").order_by("username"))
    tokens = [Token(key=Token.generate_key(), user=u) for u in users]
    Token.objects.bulk_create(tokens)
    print(f"setup: migrate {t1 - t0:.1f} s · {n_tasks:,} tasks {t2 - t1:.1f} s · {items:,} work items "
          f"{t3 - t2:.1f} s · {len(users)} annotators with tokens", flush=True)
    analyze()
    return BATCH_NAME, _credentials(tokens)


def analyze() -> None:
    """Fresh planner statistics (where autovacuum is off, as on a CI database, nothing else refreshes them)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def _credentials(tokens) -> list[tuple[str, str]]:
    """(API token, session cookie) per annotator: the API with the token, the WebSocket with the cookie, as the
    session page does with its login session."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    out = []
    for token in tokens:
        store = SessionStore()
        store[SESSION_KEY] = str(token.user.pk)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = token.user.get_session_auth_hash()
        store.create()
        out.append((token.key, store.session_key))
    return out


# --- processes -----------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_processes(env: dict, var_dir: Path, args) -> tuple[list[subprocess.Popen], str, str, str]:
    """The web server(s) and the worker; returns (processes, API base URL, WebSocket base URL, description)."""
    from django.conf import settings

    from annotate.server import embedded_redis

    embedded_redis.ensure_running(settings.VAR_DIR)
    logs = var_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    port = free_port()
    if args.server == "uvicorn":
        web = [sys.executable, "-m", "uvicorn", "annotate.config.asgi:application", "--host", "127.0.0.1", "--port",
               str(port), "--workers", str(args.web_workers), "--no-access-log", "--log-level", "warning",
               "--lifespan", "off"]
        described = f"uvicorn (ASGI), {args.web_workers} worker processes"
    else:
        web = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "annotate.config.asgi:application"]
        described = "daphne (ASGI), 1 process"
    # The web processes share a small pool of connections each (as in production: DB_POOL_MAX_SIZE).
    procs = [subprocess.Popen(web, cwd=ROOT, env={**env, "DB_POOL_MAX_SIZE": str(args.pool), "DB_CONN_MAX_AGE": "0"},
                              stdout=(logs / "web.log").open("wb"), stderr=subprocess.STDOUT, start_new_session=True),
             start_worker(env, logs, args.celery_concurrency)]
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base + "/login/", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(0.2)
    else:
        stop(procs)
        sys.exit(f"the web server did not start; see {logs}")
    pool = f"a connection pool of {args.pool} per process" if args.pool else "a new DB connection per request"
    return procs, base, f"ws://127.0.0.1:{port}", (f"{described} with {pool}; celery worker -c "
                                                   f"{args.celery_concurrency}")


def start_worker(env: dict, logs: Path, concurrency: int, log_mode: str = "wb") -> subprocess.Popen:
    """The Celery worker of the model and default queues, in a process group of its own (to kill it whole)."""
    # The worker stands for the model servers, which run on other machines in production: on this one it runs only
    # on CPU time nothing else wants (SCHED_IDLE), so that it slows the annotators' cycles, not the API under test.
    worker = ["chrt", "--idle", "0", sys.executable, "-m", "celery", "-A", "annotate", "worker",
              "-Q", "model.simulated,default", "-c", str(concurrency), "--loglevel", "WARNING",
              "-n", f"bench-{os.getpid()}@%h", "--without-mingle", "--without-gossip"]
    # One persistent connection per worker process (as in production: DB_CONN_MAX_AGE for workers).
    return subprocess.Popen(worker, cwd=ROOT, env={**env, "DB_POOL_MAX_SIZE": "0", "DB_CONN_MAX_AGE": "600"},
                            stdout=(logs / "worker.log").open(log_mode), stderr=subprocess.STDOUT,
                            start_new_session=True)


def cpu_seconds(procs: list[subprocess.Popen]) -> dict[str, float]:
    """CPU seconds used so far by each part sharing this machine (Linux /proc): the web processes, the worker,
    PostgreSQL, Redis and this client, and the whole machine. Exited processes drop out, so compare two readings
    of one phase only."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, used, name = {}, {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                comm, _, rest = stat.read().rpartition(")")
        except OSError:
            continue
        fields = rest.split()
        parent[int(pid)], used[int(pid)] = int(fields[1]), (int(fields[11]) + int(fields[12])) / tick
        name[int(pid)] = comm.partition("(")[2]

    roots = {proc.pid: role for proc, role in zip(procs, ("web", "worker"), strict=False)}

    def root_of(pid: int) -> str | None:
        while pid > 1:
            if pid in roots:
                return roots[pid]
            pid = parent.get(pid, 0)
        return None

    totals = dict.fromkeys(("web", "worker", "PostgreSQL", "Redis", "client"), 0.0)
    for pid, seconds in used.items():
        role = root_of(pid) or ("client" if pid == os.getpid() else None)
        role = role or {"postgres": "PostgreSQL", "redis-server": "Redis"}.get(name[pid])
        if role:
            totals[role] += seconds
    # Everything else too (the kernel's share of the loopback traffic, other processes): the parts above do not add
    # up to what the cores were busy with.
    with open("/proc/stat") as stat:
        ticks = [int(value) for value in stat.readline().split()[1:]]
    totals["whole machine"] = (sum(ticks) - ticks[3] - ticks[4]) / tick  # all but idle and iowait
    return totals


def cpu_shares(before: dict[str, float], after: dict[str, float], elapsed: float) -> str:
    return ", ".join(f"{role} {100 * (after[role] - before[role]) / elapsed:.0f}%" for role in before)


def tear_down(procs: list[subprocess.Popen], var_dir: Path, database_url: str, scratch: str | None) -> None:
    """Stop the processes and the embedded Redis; drop the scratch database (None: keep it)."""
    stop(procs)
    from annotate.server import embedded_redis

    embedded_redis.stop(var_dir)
    if scratch:
        from django.db import connections

        connections.close_all()
        _admin(database_url, f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')


def stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    for proc in procs:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


# --- load ----------------------------------------------------------------------------------------------------------


@dataclass
class Stats:
    next: list[float] = field(default_factory=list)
    submit: list[float] = field(default_factory=list)
    next_server: list[float] = field(default_factory=list)  # the app's own share (Server-Timing)
    next_first: list[float] = field(default_factory=list)  # each annotator's first item (the ramp-up)
    next_later: list[float] = field(default_factory=list)  # their later items
    submit_server: list[float] = field(default_factory=list)
    ws_connect: list[float] = field(default_factory=list)
    session_get: list[float] = field(default_factory=list)
    draft: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    cycles: int = 0
    requests: int = 0

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1


@dataclass
class Reply:
    status: int
    body: bytes
    server_timing: str
    ms: float  # as the client saw it: from sending the request to having read the whole body

    def json(self):
        import json

        return json.loads(self.body)

    @property
    def server_ms(self) -> float:
        """The app's own time, from its ``Server-Timing: app;dur=<ms>`` header."""
        return float(self.server_timing.partition("dur=")[2] or "nan")


class Browser:
    """One annotator's HTTP client: its own keep-alive connection, as each browser has.

    aiohttp (C-accelerated parsing) rather than httpx: the client shares this machine's two cores with the server,
    and httpx cost it about twice the CPU per request (its async stack probes for trio with a failing import on
    every request), which showed as event-loop lag in every latency measured.
    """

    def __init__(self, base: str, stats: Stats, token: str):
        import aiohttp

        self.base, self.stats, self.headers = base, stats, {"Authorization": f"Token {token}"}
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=2),
                                             timeout=aiohttp.ClientTimeout(total=15))

    async def call(self, method: str, path: str, payload: dict | None = None) -> Reply:
        start = time.perf_counter()
        async with self.session.request(method, self.base + path, json=payload, headers=self.headers) as response:
            body = await response.read()
        self.stats.requests += 1
        return Reply(response.status, body, response.headers.get("server-timing", ""),
                     (time.perf_counter() - start) * 1000)

    def socket(self, url: str, origin: str, cookie: str):
        return self.session.ws_connect(url, origin=origin, compress=0, autoping=True,
                                       headers={"Cookie": f"sessionid={cookie}"})

    async def close(self) -> None:
        await self.session.close()


class SocketWaiter:
    """Waits like the session page: reads the session's WebSocket until a snapshot shows the wanted status, and
    asks for a fresh snapshot only after ``QUIET_SECONDS`` without any event (the page's guard against a lost one)."""

    def __init__(self, browser: Browser, url: str, origin: str, cookie: str):
        self.stats = browser.stats
        self.connect = browser.socket(url, origin, cookie)

    async def __aenter__(self):
        start = time.perf_counter()
        self.ws = await self.connect.__aenter__()
        self.stats.ws_connect.append((time.perf_counter() - start) * 1000)
        return self

    async def __aexit__(self, *exc):
        return await self.connect.__aexit__(*exc)

    async def receive(self, timeout: float) -> dict:
        import json

        import aiohttp

        message = await self.ws.receive(timeout=timeout)
        if message.type != aiohttp.WSMsgType.TEXT:
            raise ConnectionResetError(f"WebSocket closed ({message.type.name}, {message.data})")
        return json.loads(message.data)

    async def wait(self, statuses: set[str], timeout: float = 30) -> str:
        import json

        give_up = time.monotonic() + timeout
        while time.monotonic() < give_up:
            try:
                event = await self.receive(QUIET_SECONDS)
            except TimeoutError:
                await self.ws.send_str(json.dumps({"type": "snapshot"}))
                continue
            if event.get("type") == "snapshot":
                status = event["session"]["status"]
                if status in statuses or status == "failed":
                    return status
        return "stalled"

    async def save_draft(self, draft: str) -> str | None:
        """The page's autosave over the socket; waits for the acknowledgement. Returns an error or None."""
        import json

        self.draft_id = getattr(self, "draft_id", 0) + 1
        start = time.perf_counter()
        await self.ws.send_str(json.dumps({"type": "draft", "draft": draft, "id": self.draft_id}))
        while True:
            try:
                event = await self.receive(30)
            except TimeoutError:
                return "draft unacknowledged"
            if event.get("type") == "draft_saved" and event.get("id") == self.draft_id:
                self.stats.draft.append((time.perf_counter() - start) * 1000)
                return None
            if event.get("type") == "draft_error":
                return "draft refused"


class PollWaiter:
    """Waits like the page's fallback: GET /api/sessions/<id>/ every ``interval`` seconds."""

    def __init__(self, browser: Browser, url: str, interval: float):
        self.browser, self.url, self.stats, self.interval = browser, url, browser.stats, interval

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False

    async def wait(self, statuses: set[str], timeout: float = 30) -> str:
        give_up = time.monotonic() + timeout
        while time.monotonic() < give_up:
            response = await self.browser.call("GET", self.url)
            if response.status != 200:
                return f"GET {response.status}"
            self.stats.session_get.append(response.ms)
            status = response.json()["status"]
            if status in statuses or status == "failed":
                return status
            await asyncio.sleep(self.interval)
        return "stalled"

    async def save_draft(self, draft: str) -> str | None:
        """The page's autosave over HTTP (when its socket is down)."""
        response = await self.browser.call("POST", self.url + "draft/", {"draft": draft})
        if response.status != 204:
            return f"draft {response.status}"
        self.stats.draft.append(response.ms)
        return None


async def annotator_loop(browser: Browser, cookie: str, batch: str, ws_base: str, deadline: float, think: float,
                         max_cycles: int, start_delay: float, wait: str, poll: float) -> None:
    import aiohttp

    stats = browser.stats
    origin = "http://" + ws_base.split("://", 1)[1]

    async def pause():
        if think:
            await asyncio.sleep(random.uniform(0.5, 1.5) * think)

    async def type_feedback(waiter):
        """The typing pause, with the page's draft autosaves (it saves 0.6 s after each burst of typing)."""
        if not think:
            return
        end = time.monotonic() + random.uniform(0.5, 1.5) * think
        typed = ""
        while (left := end - time.monotonic()) > 0:
            await asyncio.sleep(min(left, random.uniform(1.5, 3.0)))
            typed += "Count again, "
            if error := await waiter.save_draft(typed):
                stats.error(error)

    await asyncio.sleep(start_delay)
    first_item = True
    while time.monotonic() < deadline and stats.cycles < max_cycles:
        try:
            response = await browser.call("POST", "/api/next/", {"batch": batch})
            if response.status == 200 and response.json()["state"] == "done":
                return
            if response.status == 200 and response.json()["state"] == "wait":
                await asyncio.sleep(response.json()["retry_after"])
                continue
            if response.status != 200:
                stats.error(f"next {response.status}")
                await asyncio.sleep(1)
                continue
            stats.next.append(response.ms)
            stats.next_server.append(response.server_ms)
            (stats.next_first if first_item else stats.next_later).append(response.ms)
            first_item = False
            session_id = response.json()["session_id"]
            if wait == "ws":
                waiter = SocketWaiter(browser, f"{ws_base}/ws/sessions/{session_id}/", origin, cookie)
            else:
                waiter = PollWaiter(browser, f"/api/sessions/{session_id}/", poll)
            async with waiter:
                status = await waiter.wait({"awaiting_feedback"})  # the model answers round 0
                if status != "awaiting_feedback":
                    stats.error(f"round 0 {status}")
                    continue
                await type_feedback(waiter)  # reading the answer, typing feedback (autosaved)
                payload = {"feedback": "Count again: you missed the ones at the back.",
                           "client_request_id": uuid.uuid4().hex, "typing_ms": 4200}
                response = await browser.call("POST", f"/api/sessions/{session_id}/feedback/", payload)
                if response.status != 201:
                    stats.error(f"submit {response.status}")
                    continue
                stats.submit.append(response.ms)
                stats.submit_server.append(response.server_ms)
                status = await waiter.wait({"completed"})  # the model re-answers with the ground truth
                if status != "completed":
                    stats.error(f"round 1 {status}")
                    continue
            stats.cycles += 1
            await pause()  # reading the outcome before the next item
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            stats.error(type(error).__name__)
            await asyncio.sleep(1)


async def run_phase(base: str, ws_base: str, batch: str, credentials: list[tuple[str, str]], *, seconds: float,
                    think: float, ramp: float, max_cycles: int, wait: str, poll: float) -> tuple[Stats, float]:
    stats = Stats()
    # One client (one keep-alive connection) per annotator, as each browser has its own: a single shared pool of
    # 200 connections costs the client more than the server and its waits would count as latency.
    browsers = [Browser(base, stats, token) for token, _ in credentials]
    try:
        start = time.monotonic()
        deadline = start + seconds
        delays = [ramp * i / len(credentials) for i in range(len(credentials))]
        await asyncio.gather(*(annotator_loop(browser, cookie, batch, ws_base, deadline, think, max_cycles, d,
                                              wait, poll)
                               for browser, (_, cookie), d in zip(browsers, credentials, delays, strict=True)))
        elapsed = time.monotonic() - start
    finally:
        await asyncio.gather(*(browser.close() for browser in browsers))
    return stats, elapsed


def run_client(coroutine):
    """Run the simulated annotators on uvloop when it is installed (it comes with uvicorn[standard]): the client
    shares the server's cores here, while real annotators each have a browser of their own, so the less CPU
    (and event-loop lag, which counts in every latency) the client costs, the more the figures are the server's."""
    from annotate.server.heap import freeze_startup_heap

    # The client loaded Django to make the data: frozen like the web processes' heap, it costs no collector
    # pauses, which would count in the figures.
    freeze_startup_heap()
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


def report(title: str, stats: Stats, elapsed: float, target_p95: float, load_before: float, cpu: str,
           yardstick_before: float) -> bool:
    print(f"\n{title}: {stats.cycles} items done in {elapsed:.1f} s, {stats.requests / elapsed:.1f} API requests/s; "
          f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
    print(f"  machine speed: the reference workload took {yardstick_before:.1f} ms before, "
          f"{reference_workload_ms():.1f} ms after (lower is faster; compare runs only at a similar speed)")
    print(f"  CPU used, in % of one core (the machine has {os.cpu_count()}): {cpu}")
    print(f"  {'':<30}{'n':>7}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}   (ms)")
    ok = True
    for name, values, counted in (("POST /api/next/", stats.next, True),
                                  ("POST .../feedback/ (submit)", stats.submit, True),
                                  ("  next, in the app", stats.next_server, False),
                                  ("  next, first item each", stats.next_first if len(stats.next_first) > 1 else [], False),
                                  ("  next, later items", stats.next_later if len(stats.next_first) > 1 else [], False),
                                  ("  submit, in the app", stats.submit_server, False),
                                  ("WebSocket connect (snapshot)", stats.ws_connect, False),
                                  ("GET /api/sessions/<id>/ (poll)", stats.session_get, False),
                                  ("draft autosave (ws or POST)", stats.draft, False)):
        if not values and not counted:
            continue
        p50, p95, p99 = (percentile(values, q) for q in (0.5, 0.95, 0.99))
        print(f"  {name:<30}{len(values):>7}{p50:>9.1f}{p95:>9.1f}{p99:>9.1f}{max(values or [0]):>9.1f}")
        if counted:
            ok = ok and bool(values) and p95 <= target_p95
    errors = sum(stats.errors.values())
    print(f"  errors: {errors}" + (f" {stats.errors}" if errors else ""))
    print(f"  target: next-item and submit p95 <= {target_p95:.0f} ms, 0 errors: {'met' if ok and not errors else 'NOT met'}")
    return ok and not errors


def explain(batch_name: str) -> None:
    from django.db import connection, transaction

    from annotate.models import Batch, User
    from annotate.queue.items import batch_items

    batch = Batch.objects.get(name=batch_name)
    user = User.objects.filter(username__startswith="bench-").order_by("username").first()
    with transaction.atomic():
        query = batch_items(batch, user.pk).select_for_update(skip_locked=True, of=("self",))[:1]
        print("\nnext-item query plan (annotator with history):")
        print(query.explain(analyze=True))
    print(f"\nPostgreSQL {connection.cursor().connection.server_version}")


def db_connections() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return cursor.fetchone()[0]


def main() -> None:
    args = parse_args()
    if not args.database_url:
        sys.exit("Set DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres) or pass --database-url")
    var_dir = ROOT / "var" / "queue_bench"
    var_dir.mkdir(parents=True, exist_ok=True)
    lock = (var_dir / "run.lock").open("w")
    try:  # two runs at once would share the embedded Redis, the database and the annotators
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit("another queue_load run is in progress (var/queue_bench/run.lock)")
    database_url, scratch = scratch_database(args.database_url, args.in_place, args.reuse)
    args.keep = args.keep or args.reuse
    env = configure(database_url, var_dir)
    procs = []
    try:
        batch, tokens = create_data(args.tasks, args.annotators, args.reuse)
        procs, base, ws_base, described = start_processes(env, var_dir, args)
        print(f"server: {described}; {os.cpu_count()} CPUs shared with PostgreSQL and this client",
              flush=True)
        results = []
        if args.phase in ("both", "single"):
            load, cpu, speed = os.getloadavg()[0], cpu_seconds(procs), reference_workload_ms()
            stats, elapsed = run_client(run_phase(base, ws_base, batch, tokens[:1], seconds=args.seconds, think=0,
                                                   ramp=0, max_cycles=args.single_cycles, wait=args.wait, poll=0.02))
            results.append(report("Phase 1 · one annotator walking the queue (no pauses)", stats, elapsed, 30, load,
                                  cpu_shares(cpu, cpu_seconds(procs), elapsed), speed))
        if args.phase in ("both", "many"):
            analyze()  # the first phase grew the annotators' histories
            load, cpu, speed = os.getloadavg()[0], cpu_seconds(procs), reference_workload_ms()
            stats, elapsed = run_client(run_phase(base, ws_base, batch, tokens[1:], seconds=args.seconds,
                                                   think=args.think, ramp=args.ramp, max_cycles=10**9, wait=args.wait,
                                                   poll=1.5))
            results.append(report(
                f"Phase 2 · {len(tokens) - 1} annotators at once (think {args.think:g} s, ramp {args.ramp:g} s, "
                f"waiting by {args.wait})",
                stats, elapsed, 50, load, cpu_shares(cpu, cpu_seconds(procs), elapsed), speed))
        if args.explain:
            explain(batch)
        print(f"\nPostgreSQL connections to the benchmark database now: {db_connections()}")
        print("\nall targets met" if all(results) else "\nsome targets NOT met")
    finally:
        tear_down(procs, var_dir, args.database_url, None if args.keep else scratch)


if __name__ == "__main__":
    main()
