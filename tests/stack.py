"""Real processes for end-to-end and browser tests: Redis, a Celery worker and the ASGI server (daphne),
all pointed at the test database."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
WORKER_QUEUES = "default,model.simulated,model.replay,model.transformers,model.openai,bench"


def ensure_redis() -> str:
    if settings.EMBEDDED_REDIS:
        from annotate.server import embedded_redis

        embedded_redis.ensure_running(settings.VAR_DIR)
    return settings.REDIS_URL


def purge_queues() -> None:
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    client.delete(*WORKER_QUEUES.split(","), "unacked", "unacked_index")


def test_database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or ""
    auth = f"{user}:{db['PASSWORD']}@" if db.get("PASSWORD") else (f"{user}@" if user else "")
    return f"postgres://{auth}{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


def child_env(**extra) -> dict:
    env = {**os.environ, "DATABASE_URL": test_database_url(), "PYTHONUNBUFFERED": "1", **extra}
    if not settings.EMBEDDED_REDIS:
        env["REDIS_URL"] = settings.REDIS_URL
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_worker(log: Path, name: str = "test", concurrency: int = 2, queues: str = WORKER_QUEUES,
                 pool: str = "prefork", **env) -> subprocess.Popen:
    from annotate.config.celery import WORKER_OPTIONS

    # A process group of its own, so a test can kill the worker with its pool children at once.
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "annotate", "worker", "-Q", queues, "-c", str(concurrency),
         "-P", pool, "--loglevel", "INFO", "-n", f"{name}-{os.getpid()}@%h", *WORKER_OPTIONS],
        cwd=ROOT, env=child_env(**env), stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True,
    )


def kill_hard(process: subprocess.Popen) -> None:
    """SIGKILL the process and its children: no warm shutdown, no acknowledgement."""
    import signal

    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def wait_worker_ready(log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and b"ready." in log.read_bytes():
            return
        time.sleep(0.2)
    raise RuntimeError(f"the Celery worker did not start; log:\n{log.read_text(errors='replace')[-3000:]}")


def start_web(log: Path, port: int, **env) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "annotate.config.asgi:application"],
        cwd=ROOT, env=child_env(**env), stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2):
                return process
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.2)
    raise RuntimeError(f"daphne did not start; log:\n{log.read_text(errors='replace')[-3000:]}")


def stop(process: subprocess.Popen, timeout: float = 15) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until(done, timeout: float, failure: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(0.1)
    raise AssertionError(failure)


def wait_worker_settled(timeout=30):
    """Let the worker finish what the test set going (rounds being generated, completed sessions being counted):
    its open transactions would deadlock with the flush of the test's data."""
    from annotate.models import Round, Session
    from evaluation.models import CountedSession

    busy = Round.objects.filter(generation_status__in=[Round.Generation.QUEUED, Round.Generation.RUNNING])
    # Bench sessions and attention checks (gold tasks) are never counted for the reports.
    uncounted = Session.objects.filter(status=Session.Status.COMPLETED, bench_run__isnull=True,
                                       task__is_gold=False).exclude(id__in=CountedSession.objects.values("session_id"))
    _wait_until(lambda: not busy.exists() and not uncounted.exists(), timeout,
                "the worker was still busy with this test's rounds or sessions")


def wait_database_quiet(quiet_for=0.15, timeout=10.0) -> None:
    """Wait until no other connection to the test database is inside a statement or a transaction (a live server's
    request, a worker's task): the flush after a transactional test takes every table's lock, and one of them half
    way through its transaction deadlocks it. Quiet means quiet for ``quiet_for`` seconds in a row, so a request the
    browser sent just before (a keepalive on leaving a page) is seen arriving. Gives up after ``timeout``: the flush
    then says what blocked it."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    now = time.monotonic()
    deadline, quiet_since = now + timeout, now
    with connection.cursor() as cursor:
        while (now := time.monotonic()) < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                " AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')")
            if cursor.fetchone()[0]:
                quiet_since = now
            elif now - quiet_since >= quiet_for:
                return
            time.sleep(0.05)


def split_http_command(port: int) -> tuple[list[str], dict]:
    """A split deployment's HTTP side (docs/operations/deployment.md): the command and its environment, on a local
    port with one process."""
    return ([sys.executable, "-m", "gunicorn", "-c", "python:annotate.config.gunicorn"],
            {"WEB_HTTP_BIND": f"127.0.0.1:{port}", "WEB_HTTP_PROCESSES": "1"})


def session_wait(session, predicate, timeout=60):
    """Polls ``session`` until ``predicate(session)`` holds and returns it; fails naming its status and rounds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        session.refresh_from_db()
        if predicate(session):
            return session
        time.sleep(0.05)
    rounds = list(session.rounds.values("index", "generation_status", "error"))
    raise AssertionError(f"session {session.pk} stuck in {session.status}: {rounds}")


def wait_counted(session, timeout=30):
    """The worker counts a completed session for the reports; let it finish before the test's data is flushed."""
    from evaluation.models import CountedSession  # imported late: Django must be set up first

    _wait_until(lambda: CountedSession.objects.filter(session_id=session.id).exists(), timeout,
                f"session {session.id} was never counted for the reports")



def database_backends_terminate(keep_pids: set[int] = frozenset()) -> int:
    """Kill every PostgreSQL backend connected to the test database except ``keep_pids`` and the test's own
    connection (``pg_terminate_backend``, as a database restart or a failover does to its clients). Returns how
    many were killed."""
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND NOT (pid = ANY(%s))",
            [list(keep_pids)],
        )
        return cursor.fetchone()[0]


def api_token(user) -> dict:
    """The Authorization header of the user's API token (created if needed)."""
    from rest_framework.authtoken.models import Token

    return {"Authorization": f"Token {Token.objects.get_or_create(user=user)[0].key}"}


def login_cookie(user) -> str:
    """A logged-in Django session for ``user``; its key is the ``sessionid`` cookie (for the WebSocket)."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    return store.session_key


class RestartableWeb:
    """One daphne on a fixed loopback port that a test can kill outright (as a dying machine's server goes) and
    start again on the same address, so an open page has to find its way back by itself."""

    def __init__(self, log: Path, port: int | None = None, **env):
        self.log, self.port, self.env = log, port or free_port(), env
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> str:
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError(f"the server on port {self.port} is still running; kill it first")
        self.process = start_web(self.log, self.port, **self.env)
        return self.url

    def kill(self) -> None:
        """SIGKILL: no graceful close of its WebSockets, as when the machine dies."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
