"""Next-item and submit latency under load, over HTTP against a real ASGI server on PostgreSQL.

Targets: p95 <= 30 ms for one annotator walking the queue (Label Studio's next-task API with 100k tasks on this
machine: p50 202 ms, p95 294 ms); p95 <= 50 ms and 0 errors with 200 annotators at once; with 1,000 (issue 35)
next item and submit p95 <= 100 ms, draft autosave p95 <= 200 ms, 0 errors.

Usage:
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/queue_load.py
  ... --annotators 1000 --phase many   the second phase only, with 1,000 annotators
  ... --pool 8          connections per web process in Django's PostgreSQL pool (0: one per request)
  ... --reuse           reuse the data a --keep run left (skips the ~1 min setup)
  ... --clients N       client processes for the annotators (default: one per 250)
  ... --server uvicorn  one ASGI server (--web-workers processes) for HTTP and WebSockets, the small deployment
  ... --probe           sample each web process: pool waits, event-loop lag, asgiref's shared thread, channel layer

What it does:
  1. Creates a scratch database next to the given one (``<name>_queue_bench``, dropped at the end unless
     ``--keep``; ``--in-place`` uses the given database), migrates it, and bulk-creates a batch of 100k tasks x 1
     simulated model (max_rounds = 1, overlap 1), its 100k work items, and 1 + 200 annotators with API tokens and
     login sessions.
  2. Starts the app as a crowd study is deployed (docs/operations/deployment.md#split-http-and-websockets):
     pages and API from gunicorn's processes (``--http-workers``, 2 x cores + 1, of ``--http-threads`` threads,
     2), the WebSockets from uvicorn (``--web-workers``, 1); ``--server uvicorn`` serves both from uvicorn
     (``--web-workers``, one per core, at least 2), ``--server daphne`` from one daphne process. With them one
     Celery worker of 4 processes, as the documented worker command runs it (``--celery-concurrency``;
     simulated model, no delay; at SCHED_IDLE priority, its session ranked last where Linux schedules by session,
     standing in for model servers on other machines) on an
     embedded Redis, as in production: a submit saves the round and dispatches the model call on commit; the
     worker answers, streams over the channel layer and completes the session.
  3. Phase 1, one annotator, no pauses: POST /api/next/ (reserves a new pair: the session starts and round 0 is
     queued), wait for the model's answer on the session's WebSocket (as the page does; ``--wait poll`` polls
     GET /api/sessions/<id>/ instead), POST /api/sessions/<id>/feedback/ (the submit), wait until the session
     completes (round 1 is the last: the model is told the answer); repeat.
  4. Phase 2, 200 annotators at once (asyncio + aiohttp, in client processes of their own:
     benchmarks/load_client.py), the same loop with human pauses: typing the
     feedback takes ``--think`` seconds on average (0.5x-1.5x), with the page's draft autosaves every 1.5-3 s, and
     reading the outcome as long again; starts spread over ``--ramp`` s.
  Each phase is bounded in time (``--seconds``). It prints p50/p95/p99/max of next-item and submit (and of the
  WebSocket connects, polls and draft saves, and how late each client process's event loop ran, which counts in
  every latency the client measures), the request rate and the error count (unexpected statuses, exceptions,
  sessions that did not advance within 30 s); the app's own share of next and submit (``Server-Timing``); in phase 2,
  next-item split into each annotator's first item (all 200 arrive within the ramp) and the later ones; items done
  per second; and the CPU each part of the system used (the web processes, the worker, this run's PostgreSQL
  backends and Redis, the client processes, the whole machine), with the time the host took from this virtual
  machine's cores while they had work (steal: where it is high, the run measured the host's neighbours too).

Latencies are measured by the client: HTTP, the server's queueing and the client's event loop. Everything shares
this machine's CPUs, so other work shows in the figures: the load averages are printed before and after each phase.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.figures import percentile, reference_workload_ms  # noqa: E402
from benchmarks.load_client import ClientProcesses, run_phase_in_processes  # noqa: E402
from benchmarks.machine_cpu import MachineSampler, cpu_seconds, cpu_shares  # noqa: E402
from benchmarks.probe_report import Probe  # noqa: E402

BATCH_NAME = "queue-load"
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
    parser.add_argument("--models", type=int, default=1,
                        help="simulated models the batch compares (2+: each annotator is served them in turn, "
                             "starting where their arrival puts them)")
    parser.add_argument("--seconds", type=float, default=60, help="time bound of each phase")
    parser.add_argument("--single-cycles", type=int, default=1000, help="phase 1 stops after this many items")
    parser.add_argument("--think", type=float, default=15.0,
                        help="phase 2: mean time (s) to type the feedback (with draft autosaves) and to read the "
                             "outcome before the next item")
    parser.add_argument("--ramp", type=float, default=15.0, help="phase 2: annotators start over this many s")
    parser.add_argument("--wait", choices=["ws", "poll"], default="ws",
                        help="how a client waits for the model: the session's WebSocket (as the page does) or "
                             "GET /api/sessions/<id>/ every 1.5 s (the page's fallback)")
    parser.add_argument("--web-workers", type=int, default=None,
                        help="ASGI processes (default: 1 with --server split, else one per core, at least 2)")
    parser.add_argument("--celery-concurrency", type=int, default=4,
                        help="the worker's processes: 4, as docs/operations/queues-and-workers.md runs it")
    parser.add_argument("--pool", type=int, default=8,
                        help="DB_POOL_MAX_SIZE of the web processes: Django's PostgreSQL connection pool, this many "
                             "connections per process (0: a new connection per request)")
    parser.add_argument("--server", choices=["split", "uvicorn", "daphne"], default="split",
                        help="split (a crowd study's deployment, docs/operations/deployment.md): gunicorn (WSGI) for "
                             "HTTP and uvicorn (--web-workers) for the WebSockets; uvicorn or daphne (one process): "
                             "one ASGI server for both")
    parser.add_argument("--http-workers", type=int, default=None,
                        help="--server split: gunicorn's processes (default: annotate/config/gunicorn.py's)")
    parser.add_argument("--http-threads", type=int, default=None,
                        help="--server split: threads per gunicorn process (default: annotate/config/gunicorn.py's)")
    parser.add_argument("--phase", choices=["both", "single", "many"], default="both")
    parser.add_argument("--explain", action="store_true", help="print the plan of the next-item query at the end")
    parser.add_argument("--clients", type=int, default=0,
                        help="client processes simulating the annotators (0: one per 250 annotators)")
    parser.add_argument("--probe", action="store_true",
                        help="sample each web process (benchmarks/probe_asgi.py): connection pool waits, event-loop "
                             "lag, asgiref's shared thread, the channel layer's round trip")
    args = parser.parse_args()
    if args.web_workers is None:  # the split's one ASGI process carries only the sockets
        args.web_workers = 1 if args.server == "split" else max(2, os.cpu_count() or 2)
    return args


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


def scratch_setup(database_url: str, var_name: str, suffix: str) -> tuple[str, str | None, dict, Path]:
    """What a benchmark on a scratch database starts with: (its URL, its name to drop at the end, the environment
    the app runs with, the benchmark's own folder under var/); exits with a message without a PostgreSQL URL."""
    if not database_url:
        sys.exit("Set DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres) or pass --database-url")
    var_dir = ROOT / "var" / var_name
    var_dir.mkdir(parents=True, exist_ok=True)
    url, scratch = scratch_database(database_url, False, suffix=suffix)
    return url, scratch, configure(url, var_dir), var_dir


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


def create_data(n_tasks: int, n_annotators: int, reuse: bool, n_models: int = 1) -> tuple[str, list[str]]:
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
        models = [ModelConfig.objects.create(name="bench-sim" if n == 0 else f"bench-sim-{n + 1}",
                                             backend=ModelConfig.Backend.SIMULATED, backend_settings={"chunk_delay": 0})
                  for n in range(n_models)]
        batch = Batch.objects.create(name=BATCH_NAME, max_rounds=1, overlap=1, task_count=n_tasks)
        batch.models_to_evaluate.add(*models)
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
    if args.server in ("uvicorn", "split"):
        app = "benchmarks.probe_asgi:application" if getattr(args, "probe", False) else "annotate.config.asgi:application"
        web = [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port",
               str(port), "--workers", str(args.web_workers), "--no-access-log", "--log-level", "warning",
               "--lifespan", "off"]
        described = f"uvicorn (ASGI), {args.web_workers} worker process{'es' if args.web_workers != 1 else ''}"
    else:
        web = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "annotate.config.asgi:application"]
        described = "daphne (ASGI), 1 process"
    # The web processes share a small pool of connections each (as in production: DB_POOL_MAX_SIZE).
    web_env = {**env, "DB_POOL_MAX_SIZE": str(args.pool), "DB_CONN_MAX_AGE": "0", "QUEUE_LOAD_PROBE_DIR": str(logs)}
    procs = [subprocess.Popen(web, cwd=ROOT, env=web_env,
                              stdout=(logs / "web.log").open("wb"), stderr=subprocess.STDOUT, start_new_session=True),
             start_worker(env, logs, args.celery_concurrency)]
    base = f"http://127.0.0.1:{port}"
    ws_base = f"ws://127.0.0.1:{port}"
    servers = [base]  # each must answer before the run starts
    if args.server == "split":
        http_port = free_port()
        # As deployed (docs/operations/deployment.md): gunicorn's sync processes with annotate/config/gunicorn.py,
        # each with one persistent connection.
        http = [sys.executable, "-m", "gunicorn", "-c", "python:annotate.config.gunicorn", "--log-level", "warning"]
        http_env = {**env, "WEB_HTTP_BIND": f"127.0.0.1:{http_port}",
                    "DB_POOL_MAX_SIZE": "0", "DB_CONN_MAX_AGE": "600", "SERVER_TIMING_DETAIL": "1"}
        for name, value in (("WEB_HTTP_PROCESSES", args.http_workers), ("WEB_HTTP_THREADS", args.http_threads)):
            if value is not None:
                http_env[name] = str(value)
        procs.append(subprocess.Popen(http, cwd=ROOT, env=http_env,
                                      stdout=(logs / "http.log").open("wb"), stderr=subprocess.STDOUT,
                                      start_new_session=True))
        base = f"http://127.0.0.1:{http_port}"
        servers.append(base)
        described = f"gunicorn (WSGI, {gunicorn_sizing(http_env)}) for HTTP + {described} for WebSockets"
    for url in servers:
        if not serving(url):
            stop(procs)
            sys.exit(f"the web server did not start; see {logs}")
    pool = f"a connection pool of {args.pool} per process" if args.pool else "a new DB connection per request"
    return procs, base, ws_base, f"{described} with {pool}; celery worker -c {args.celery_concurrency}"


def gunicorn_sizing(http_env: dict) -> str:
    """How annotate/config/gunicorn.py sizes gunicorn with these settings, in words."""
    out = subprocess.run([sys.executable, "-c", "import annotate.config.gunicorn as g; print(g.workers, g.threads)"],
                         cwd=ROOT, env=http_env, capture_output=True, text=True, check=True).stdout.split()
    processes, threads = int(out[0]), int(out[1])
    return f"{processes} processes x {threads} threads" if threads > 1 else f"{processes} sync processes"


def serving(base: str, seconds: float = 60) -> bool:
    """Whether the server at ``base`` answers its login page within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base + "/login/", timeout=2) as response:
                if response.status == 200:
                    return True
        except OSError:
            time.sleep(0.2)
    return False


def start_worker(env: dict, logs: Path, concurrency: int, log_mode: str = "wb") -> subprocess.Popen:
    """The Celery worker of the model and default queues, in a process group of its own (to kill it whole)."""
    # The worker stands for the model servers, which run on other machines in production: on this one it runs only
    # on CPU time nothing else wants (SCHED_IDLE), so that it slows the annotators' cycles, not the API under test.
    worker = ["chrt", "--idle", "0", sys.executable, "-m", "celery", "-A", "annotate", "worker",
              "-Q", "model.simulated,default", "-c", str(concurrency), "--loglevel", "WARNING",
              "-n", f"bench-{os.getpid()}@%h", "--without-mingle", "--without-gossip"]
    # One persistent connection per worker process (as in production: DB_CONN_MAX_AGE for workers).
    proc = subprocess.Popen(worker, cwd=ROOT, env={**env, "DB_POOL_MAX_SIZE": "0", "DB_CONN_MAX_AGE": "600"},
                            stdout=(logs / "worker.log").open(log_mode), stderr=subprocess.STDOUT,
                            start_new_session=True)
    worker_session_priority(proc.pid, idle=True)
    return proc


def worker_priority(worker: subprocess.Popen, policy: str) -> None:
    """Every process of the worker's group to ``policy`` ("other": the normal one, "idle"), and its session with
    them (``worker_session_priority``)."""
    pids = subprocess.run(["pgrep", "-g", str(worker.pid)], capture_output=True, text=True).stdout.split()
    for pid in pids:
        subprocess.run(["chrt", f"--{policy}", "--all-tasks", "--pid", "0", pid], capture_output=True)
    worker_session_priority(worker.pid, idle=policy == "idle")


def worker_session_priority(pid: int, idle: bool) -> None:
    """Rank the worker's whole session last (idle) or as any other (not idle), where Linux schedules by session.

    With autogroup on (/proc/sys/kernel/sched_autogroup_enabled, sched(7)), the scheduler first shares the cores
    between sessions, each of equal weight, and only then between a session's threads by their policy. The worker
    runs in a session of its own (so that it stops whole), and SCHED_IDLE alone ranked it only against its own
    processes: at 1,000 annotators it took its share of the cores while gunicorn's requests waited for one. The
    session's nice value (19, the lowest rank) ranks the session itself. A kernel built without autogroup has no
    such file, and SCHED_IDLE does it alone."""
    path = Path(f"/proc/{pid}/autogroup")
    if path.exists():
        path.write_text("19" if idle else "0")


def redis_pid(var_dir: Path) -> int | None:
    pid = var_dir / "redis.pid"
    return int(pid.read_text().strip()) if pid.exists() else None


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



def targets_for(annotators: int) -> dict[str, float]:
    """The p95 bars (ms) of a phase: issue 4's for one annotator and for 200, issue 35's beyond."""
    if annotators == 1:
        return {"next": 30, "submit": 30}
    if annotators <= 200:
        return {"next": 50, "submit": 50, "draft": 200}
    return {"next": 100, "submit": 100, "draft": 200}


def report(title: str, clients: ClientProcesses, target_p95: dict[str, float], load_before: tuple[float, ...],
           cpu: str, yardstick_before: float, machine: str) -> bool:
    stats, elapsed = clients.stats, clients.elapsed
    loads = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{title}: {stats.cycles} items done in {elapsed:.1f} s ({stats.cycles / elapsed:.1f} items/s), "
          f"{stats.requests / elapsed:.1f} API requests/s; load average (1/5/15 min) "
          f"{'/'.join(f'{x:.1f}' for x in load_before)} before, {loads} after")
    print(f"  machine speed: the reference workload took {yardstick_before:.1f} ms before, "
          f"{reference_workload_ms():.1f} ms after (lower is faster; compare runs only at a similar speed)")
    print(f"  CPU used, in % of one core (the machine has {os.cpu_count()}): {cpu}")
    print(f"  the whole machine, second by second: {machine}")
    print(f"  load generator: {clients.describe()}")
    print(f"  {'':<30}{'n':>7}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}   (ms)")
    ok = True
    for name, key, values in (("POST /api/next/", "next", stats.next),
                              ("POST .../feedback/ (submit)", "submit", stats.submit),
                              ("  next, in the app", "", stats.next_server),
                              ("  next, first item each", "", stats.next_first if len(stats.next_first) > 1 else []),
                              ("  next, later items", "", stats.next_later if len(stats.next_first) > 1 else []),
                              ("  submit, in the app", "", stats.submit_server),
                              ("WebSocket connect (snapshot)", "", stats.ws_connect),
                              ("GET /api/sessions/<id>/ (poll)", "", stats.session_get),
                              ("draft autosave (ws or POST)", "draft", stats.draft),
                              ("client event-loop lag", "", stats.loop_lag)):
        counted = key in target_p95
        if not values and not counted:
            continue
        p50, p95, p99 = (percentile(values, q) for q in (0.5, 0.95, 0.99))
        print(f"  {name:<30}{len(values):>7}{p50:>9.1f}{p95:>9.1f}{p99:>9.1f}{max(values or [0]):>9.1f}")
        if counted:
            ok = ok and bool(values) and p95 <= target_p95[key]
    print_waiting(stats)
    print_costs(stats)
    errors = sum(stats.errors.values())
    print(f"  errors: {errors}" + (f" {stats.errors}" if errors else ""))
    bars = ", ".join(f"{key} p95 <= {ms:.0f} ms" for key, ms in target_p95.items())
    print(f"  target: {bars}, 0 errors: {'met' if ok and not errors else 'NOT met'}")
    return ok and not errors


def print_waiting(stats) -> None:
    """Client-observed p95 against the app's own p95 (Server-Timing): what a request spent waiting in front of the
    app (the server's backlog, a busy worker) or on the way. Close to 1 while no request waits for a free worker."""
    for name, client, app in (("next", stats.next, stats.next_server), ("submit", stats.submit, stats.submit_server)):
        app = [ms for ms in app if ms == ms]  # NaN: a reply without the header
        if client and app:
            client_p95, app_p95 = percentile(client, 0.95), percentile(app, 0.95)
            print(f"  {name} p95 at the client / in the app: {client_p95:.1f} / {app_p95:.1f} ms = "
                  f"{client_p95 / app_p95:.2f}x (bar: <= 1.5x)")


def print_costs(stats) -> None:
    """What each kind of request cost the app, from its Server-Timing detail (the split's gunicorn side)."""
    kinds = (("next, first item each", stats.next_first_cost), ("next, later items", stats.next_later_cost),
             ("submit", stats.submit_cost), ("draft (POST)", stats.draft_cost))
    if not any(costs for _, costs in kinds):
        return
    print(f"  {'cost in the app':<30}{'n':>7}{'CPU p50':>9}{'CPU p95':>9}{'DB p50':>9}{'DB p95':>9}{'queries':>9}")
    for name, costs in kinds:
        if costs:
            cpu, db = [c for c, _, _ in costs], [d for _, _, d in costs]
            print(f"  {name:<30}{len(costs):>7}{percentile(cpu, 0.5):>9.1f}{percentile(cpu, 0.95):>9.1f}"
                  f"{percentile(db, 0.5):>9.1f}{percentile(db, 0.95):>9.1f}{max(c[1] for c in costs):>9}")
    print("  (ms of the request thread's CPU, ms spent in its queries; queries: the most in one request, BEGIN and "
          "COMMIT not counted)")


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
        batch, tokens = create_data(args.tasks, args.annotators, args.reuse, args.models)
        procs, base, ws_base, described = start_processes(env, var_dir, args)
        print(f"server: {described}; {os.cpu_count()} CPUs shared with PostgreSQL and the load generator",
              flush=True)
        ours = {"database": urlsplit(database_url).path.lstrip("/"), "redis_pid": redis_pid(var_dir)}
        probe = Probe(var_dir / "logs" if args.probe else None)
        results = []
        phases = []
        if args.phase in ("both", "single"):
            phases.append(("Phase 1 · one annotator walking the queue (no pauses)", tokens[:1],
                           {"think": 0, "ramp": 0, "max_cycles": args.single_cycles, "poll": 0.02}))
        if args.phase in ("both", "many"):
            phases.append((f"Phase 2 · {len(tokens) - 1} annotators at once (think {args.think:g} s, ramp "
                           f"{args.ramp:g} s, waiting by {args.wait})", tokens[1:],
                           {"think": args.think, "ramp": args.ramp, "max_cycles": 10**9, "poll": 1.5}))
        for title, credentials, options in phases:
            analyze()  # an earlier phase grew the annotators' histories
            probe.mark(title)
            load, speed = os.getloadavg(), reference_workload_ms()
            cpu = cpu_seconds(procs, **ours)
            with MachineSampler() as machine:
                clients = run_phase_in_processes(base, ws_base, batch, credentials, processes=args.clients,
                                                 seconds=args.seconds, wait=args.wait, **options)
            after = cpu_seconds(procs, **ours)
            after["client"] += sum(clients.cpu_seconds)  # the client processes have exited: their own reports
            results.append(report(title, clients, targets_for(len(credentials)), load,
                                  cpu_shares(cpu, after, clients.elapsed), speed, machine.describe()))
            probe.report()
        if args.explain:
            explain(batch)
        print(f"\nPostgreSQL connections to the benchmark database now: {db_connections()}")
        print("\nall targets met" if all(results) else "\nsome targets NOT met")
    finally:
        tear_down(procs, var_dir, args.database_url, None if args.keep else scratch)


if __name__ == "__main__":
    main()
