"""Failover: two complete web nodes behind nginx, simulated annotators through the proxy, one node killed mid-run
(every process of it, SIGKILL), then started again. Shows that the annotators' pages land on the surviving node and
that nothing typed or submitted is lost.

Usage:
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/failover.py
  ... --annotators 50            fewer annotators on a busy machine
  ... --seconds 100 --kill-at 30 --restart-at 60

What runs (all on loopback addresses): a scratch database ``<name>_failover_<pid>`` (dropped at the end) with the
load benchmark's data (``queue_load.py``: a batch of ``--tasks`` tasks x 1 simulated model, three feedback rounds
and answers streamed word by word as in ``soak.py``), an embedded Redis, one Celery worker and celery beat shared by
both nodes (they stand for the model servers), and two web nodes, each as a crowd study deploys one
(docs/operations/deployment.md): gunicorn's sync processes for HTTP and a uvicorn process for the WebSockets.
Debian's nginx (installed with apt-get when missing) runs in the foreground on a free loopback port with the
split deployment's config from ``docker/nginx-split.conf``, its two upstreams rendered with both nodes.

Each annotator (the HTTP client and WebSocket of ``benchmarks/load_client.py``) loops as the session page does:
next item, the session's WebSocket, typing with draft autosaves over the socket, submit with a client_request_id
(sent again with the same id after an error), Retry on a failed answer. When its socket drops it reconnects as the
page does (static/js/session.js: from a quarter second, doubling with jitter up to 5 s) through the proxy, and
saves again a draft the dead node never acknowledged. Before each submit it reads the session back and checks
that the saved draft is what it typed.

Prints: the WebSocket reconnect times (the socket's loss to the snapshot on the new one) p50/p95/max (target
p95 <= 2 s); drafts lost (the saved draft is not what was typed; target 0); rounds lost and duplicated (soak.py's
check after a drain: unfinished rounds, a submit answered 201 without exactly one round, a doubled or missing round
index; target 0); HTTP 5xx seen by the annotators, against the requests in flight at the kill (nginx's log); the p95
of next item and submit before the kill, in the 10 s after it, until the restart, and after it; and the requests
and open WebSockets per node in each of those spans, to show the load going back to both.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.figures import percentile  # noqa: E402
from benchmarks.load_client import QUIET_SECONDS, Browser, Stats, next_item, run_client  # noqa: E402
from benchmarks.queue_load import (  # noqa: E402
    BATCH_NAME,
    configure,
    create_data,
    free_port,
    scratch_database,
    serving,
    start_worker,
    tear_down,
)
from benchmarks.restore_drill import doubled_rounds  # noqa: E402
from benchmarks.soak import _soak_settings, drain, lost_rounds, start_beat  # noqa: E402

NGINX_CONF = ROOT / "docker" / "nginx-split.conf"
SPANS = ("before the kill", "10 s after it", "until the restart", "after the restart")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--annotators", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=100, help="the whole run")
    parser.add_argument("--kill-at", type=float, default=30, help="s into the run when one node is killed")
    parser.add_argument("--restart-at", type=float, default=60, help="s into the run when it starts again")
    parser.add_argument("--ramp", type=float, default=10, help="the annotators start over this many s")
    parser.add_argument("--think", type=float, default=4.0, help="mean s typing each feedback and reading an outcome")
    parser.add_argument("--chunk-delay", type=float, default=0.005,
                        help="s between the simulated model's words (short: items end and pages open new sockets "
                             "during the run, so the spread back after the restart shows)")
    parser.add_argument("--celery-concurrency", type=int, default=4, help="the shared worker's processes")
    parser.add_argument("--http-workers", type=int, default=2, help="gunicorn's sync processes per node")
    parser.add_argument("--upstream-options", default="",
                        help="parameters of each upstream server line, e.g. 'max_fails=0' (default: none, nginx's "
                             "max_fails=1 fail_timeout=10s)")
    parser.add_argument("--drain", type=float, default=30, help="s for rounds under way to finish after the run")
    args = parser.parse_args()
    if not args.ramp < args.kill_at < args.restart_at < args.seconds:
        parser.error("the times must come in this order: --ramp < --kill-at < --restart-at < --seconds")
    if not args.database_url.startswith("postgres"):
        parser.error("the benchmark needs PostgreSQL: DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres")
    return args


# --- the nodes and the proxy -----------------------------------------------------------------------------------------


@dataclass
class Node:
    """One web node: gunicorn (HTTP) and uvicorn (WebSockets), each in a process group of its own."""

    name: str
    http_port: int
    ws_port: int
    procs: list[subprocess.Popen] = field(default_factory=list)

    def start(self, env: dict, logs: Path, http_workers: int) -> None:
        # The same processes as queue_load.py's split deployment (annotate/config/gunicorn.py, uvicorn for sockets).
        http = [sys.executable, "-m", "gunicorn", "-c", "python:annotate.config.gunicorn", "--log-level", "warning"]
        http_env = {**env, "WEB_HTTP_BIND": f"127.0.0.1:{self.http_port}", "WEB_HTTP_PROCESSES": str(http_workers),
                    "DB_POOL_MAX_SIZE": "0", "DB_CONN_MAX_AGE": "600"}
        ws = [sys.executable, "-m", "uvicorn", "annotate.config.asgi:application", "--host", "127.0.0.1", "--port",
              str(self.ws_port), "--no-access-log", "--log-level", "warning", "--lifespan", "off"]
        ws_env = {**env, "DB_POOL_MAX_SIZE": "4", "DB_CONN_MAX_AGE": "0"}
        self.procs = [
            subprocess.Popen(command, cwd=ROOT, env=command_env, stdout=(logs / f"{self.name}-{kind}.log").open("ab"),
                             stderr=subprocess.STDOUT, start_new_session=True)
            for kind, command, command_env in (("http", http, http_env), ("ws", ws, ws_env))]
        for port in (self.http_port, self.ws_port):
            if not serving(f"http://127.0.0.1:{port}"):
                raise RuntimeError(f"node {self.name} did not start on port {port}; see {logs}")

    def kill(self) -> None:
        """Every process of the node at once, as when its machine dies."""
        for proc in self.procs:
            os.killpg(proc.pid, signal.SIGKILL)
        for proc in self.procs:
            proc.wait()


def ensure_nginx() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if found:
        return found
    print("installing Debian's nginx (apt-get install -y nginx; its service is not started)", flush=True)
    # RUNLEVEL=1: the package's scripts leave the system service stopped; this benchmark runs its own nginx.
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "RUNLEVEL": "1"}
    subprocess.run(["apt-get", "install", "-y", "-qq", "nginx"], env=env, check=True)
    return "/usr/sbin/nginx"


def render_nginx(directory: Path, port: int, nodes: list[Node], options: str = "") -> Path:
    """docker/nginx-split.conf with both nodes in each upstream, listening on a loopback port, wrapped in a whole
    nginx.conf that runs in the foreground, writes only under ``directory`` and logs each request's node."""
    site = NGINX_CONF.read_text()
    if ";" in options or "{" in options or "}" in options:
        raise ValueError(f"--upstream-options must be parameters of a server line, not {options!r}")
    extra = f" {options}" if options else ""
    asgi = " ".join(f"server 127.0.0.1:{node.ws_port}{extra};" for node in nodes)
    wsgi = " ".join(f"server 127.0.0.1:{node.http_port}{extra};" for node in nodes)
    replacements = {"upstream asgi { server web:8000; }": f"upstream asgi {{ {asgi} }}",
                    "upstream wsgi { server web-http:8001; }": f"upstream wsgi {{ {wsgi} }}",
                    "listen 80;": f"listen 127.0.0.1:{port};"}
    for old, new in replacements.items():
        if old not in site:
            raise RuntimeError(f"{NGINX_CONF} no longer has {old!r}; update render_nginx")
        site = site.replace(old, new)
    (directory / "site.conf").write_text(site)
    conf = directory / "nginx.conf"
    conf.write_text(f"""daemon off;
worker_processes 1;
pid {directory}/nginx.pid;
error_log {directory}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    log_format node '$msec $request_time $status "$upstream_addr" $request_method $uri';
    access_log {directory}/access.log node;
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    include {directory}/site.conf;
}}
""")
    return conf


def start_nginx(binary: str, conf: Path, port: int, logs: Path) -> subprocess.Popen:
    proc = subprocess.Popen([binary, "-c", str(conf), "-p", str(conf.parent)], stdout=(logs / "nginx.log").open("ab"),
                            stderr=subprocess.STDOUT, start_new_session=True)
    if not serving(f"http://127.0.0.1:{port}"):
        raise RuntimeError(f"nginx did not start; see {conf.parent}/error.log")
    return proc


def open_sockets(port: int) -> int:
    """Established TCP connections to a local port (Linux /proc): a node's open WebSockets from the proxy."""
    count = 0
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            local, state = line.split()[1], line.split()[3]
            if state == "01" and int(local.rsplit(":", 1)[1], 16) == port:
                count += 1
    return count


# --- the annotators --------------------------------------------------------------------------------------------------


@dataclass
class Run:
    start: float  # time.monotonic() at the start
    start_wall: float  # time.time() at the same moment (nginx's log has wall-clock times)
    kill_at: float = 0.0
    kill_wall: float = 0.0
    restart_at: float = 0.0
    next_ms: list[tuple[float, float]] = field(default_factory=list)  # (when, ms)
    submit_ms: list[tuple[float, float]] = field(default_factory=list)
    reconnect_s: list[float] = field(default_factory=list)
    acknowledged: set[str] = field(default_factory=set)
    drafts_checked: int = 0
    drafts_lost: int = 0
    server_errors: int = 0
    in_flight: int = 0
    in_flight_at_kill: int = 0
    errors: Counter = field(default_factory=Counter)
    retries: int = 0

    def span(self, when: float) -> int:
        if when < self.kill_at:
            return 0
        if when < self.kill_at + 10:
            return 1
        return 2 if when < self.restart_at else 3


async def call(run: Run, browser: Browser, method: str, path: str, payload: dict | None = None):
    run.in_flight += 1
    try:
        reply = await browser.call(method, path, payload)
    finally:
        run.in_flight -= 1
    if reply.status >= 500:
        run.server_errors += 1
    return reply


def reconnect_delay(attempt: int) -> float:
    """As static/js/session.js: from a quarter second, doubling up to 5 s, half of it jitter."""
    ceiling = min(5.0, 0.25 * 2**attempt)
    return ceiling / 2 + random.random() * ceiling / 2


class LiveSocket:
    """The session page's WebSocket: reconnects through the proxy when it drops, and saves again the draft no node
    acknowledged."""

    def __init__(self, run: Run, browser: Browser, url: str, origin: str, cookie: str, give_up: float):
        self.run, self.browser, self.url, self.origin, self.cookie = run, browser, url, origin, cookie
        self.give_up = give_up
        self.ws = None
        self.draft_id = 0
        self.unacknowledged: str | None = None
        self.pending: list[dict] = []

    async def open(self) -> None:
        import aiohttp

        for attempt in range(10):
            try:
                self.ws = await self.browser.socket(self.url, self.origin, self.cookie)
                return
            except (aiohttp.ClientError, OSError):
                await asyncio.sleep(reconnect_delay(attempt))
        raise ConnectionResetError("no node took the WebSocket")

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def _reconnect(self) -> None:
        import aiohttp

        lost = time.monotonic()
        for attempt in range(100):
            if time.monotonic() > self.give_up:
                raise TimeoutError("gave up reconnecting")
            await asyncio.sleep(reconnect_delay(attempt))
            try:
                self.ws = await self.browser.socket(self.url, self.origin, self.cookie)
                message = await self.ws.receive(timeout=10)
            except (aiohttp.ClientError, OSError, TimeoutError):
                continue
            if message.type == aiohttp.WSMsgType.TEXT:
                self.run.reconnect_s.append(time.monotonic() - lost)
                self.pending.append(json.loads(message.data))  # the snapshot brings the page up to date
                if self.unacknowledged is not None:
                    await self._send_draft(self.unacknowledged)
                return
        raise ConnectionResetError("no node took the WebSocket")

    async def receive(self) -> dict:
        import aiohttp

        while True:
            if self.pending:
                return self.pending.pop(0)
            try:
                message = await self.ws.receive(timeout=QUIET_SECONDS)
            except TimeoutError:
                await self._send({"type": "snapshot"})
                continue
            except (aiohttp.ClientError, ConnectionError):  # reset while answering a ping: dropped like a close
                await self._reconnect()
                continue
            if message.type == aiohttp.WSMsgType.TEXT:
                event = json.loads(message.data)
                if event.get("type") == "draft_saved" and event.get("id") == self.draft_id:
                    self.unacknowledged = None
                return event
            await self._reconnect()

    async def _send(self, event: dict) -> None:
        try:
            await self.ws.send_str(json.dumps(event))
        except (ConnectionError, RuntimeError):  # closed under us: the next receive reconnects
            pass

    async def _send_draft(self, draft: str) -> None:
        self.draft_id += 1
        self.unacknowledged = draft
        await self._send({"type": "draft", "draft": draft, "id": self.draft_id})

    async def save_draft(self, draft: str) -> None:
        await self._send_draft(draft)
        while self.unacknowledged is not None and time.monotonic() < self.give_up:
            await self.receive()

    async def wait(self, statuses: set[str], session_url: str) -> str:
        """Until a snapshot shows one of ``statuses``; a failed answer is retried with the page's Retry button."""
        while time.monotonic() < self.give_up:
            event = await self.receive()
            if event.get("type") != "snapshot":
                continue
            status = event["session"]["status"]
            if status == "failed":
                self.run.retries += 1
                await call(self.run, self.browser, "POST", session_url + "retry/")
                continue
            if status in statuses:
                return status
        return "gave up"


async def annotator(run: Run, browser: Browser, cookie: str, ws_base: str, args, stop_at: float, give_up: float,
                    delay: float) -> None:
    import aiohttp

    origin = "http://" + ws_base.split("://", 1)[1]
    await asyncio.sleep(delay)
    while time.monotonic() < stop_at:
        try:
            reply = await next_item(lambda: call(run, browser, "POST", "/api/next/", {"batch": BATCH_NAME}),
                                    run.errors)
            if reply == "done":
                return
            if reply is None:
                continue
            run.next_ms.append((time.monotonic(), reply.ms))
            session_id = reply.json()["session_id"]
            session_url = f"/api/sessions/{session_id}/"
            live = LiveSocket(run, browser, f"{ws_base}/ws/sessions/{session_id}/", origin, cookie, give_up)
            await live.open()
            try:
                status = await live.wait({"awaiting_feedback", "awaiting_verdict", "completed"}, session_url)
                while status == "awaiting_feedback" and time.monotonic() < stop_at:
                    typed = ""
                    for _ in range(2):
                        await asyncio.sleep(random.uniform(0.25, 0.75) * args.think)
                        typed += "Count again, carefully. "
                        await live.save_draft(typed)
                    await check_draft(run, browser, session_url, typed)
                    if not await submit(run, browser, session_url, typed.strip()):
                        break
                    status = await live.wait({"awaiting_feedback", "awaiting_verdict", "completed"}, session_url)
            finally:
                await live.close()
            await asyncio.sleep(random.uniform(0.5, 1.5) * args.think / 2)
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            # Named with where it happened in this loop (the item is then resumed by the next "next item").
            here = [frame.name for frame in traceback.extract_tb(error.__traceback__) if frame.filename == __file__]
            run.errors[f"{type(error).__name__} in {here[-1] if here else '?'}"] += 1
            await asyncio.sleep(1)


async def check_draft(run: Run, browser: Browser, session_url: str, typed: str) -> None:
    """The saved draft, read back (as a reload would show it), must be what was typed."""
    for _ in range(10):
        reply = await call(run, browser, "GET", session_url)
        if reply.status == 200:
            run.drafts_checked += 1
            run.drafts_lost += reply.json().get("feedback_draft") != typed
            return
        await asyncio.sleep(0.5)
    run.errors["draft unreadable"] += 1


async def submit(run: Run, browser: Browser, session_url: str, feedback: str) -> bool:
    """Send the feedback; after an error, again with the same client_request_id, as the page does."""
    import aiohttp

    payload = {"feedback": feedback, "client_request_id": uuid.uuid4().hex}
    for _ in range(10):
        try:
            reply = await call(run, browser, "POST", session_url + "feedback/", payload)
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            run.errors[f"submit {type(error).__name__}"] += 1
            await asyncio.sleep(0.5)
            continue
        if reply.status == 201:
            run.submit_ms.append((time.monotonic(), reply.ms))
            run.acknowledged.add(payload["client_request_id"])
            return True
        run.errors[f"submit {reply.status}"] += 1
        await asyncio.sleep(0.5)
    return False


async def chaos(run: Run, node: Node, env: dict, logs: Path, args, sockets: list[tuple[str, list[int]]],
                nodes: list[Node]) -> None:
    """Kill the node at --kill-at, start it again at --restart-at; sample the open WebSockets per node each s."""
    killed = restarted = False
    end = run.start + args.seconds
    while (now := time.monotonic()) < end:
        if not killed and now >= run.start + args.kill_at:
            run.in_flight_at_kill = run.in_flight
            run.kill_at, run.kill_wall = now, time.time()
            node.kill()
            killed = True
        if killed and not restarted and now >= run.start + args.restart_at:
            await asyncio.to_thread(node.start, env, logs, args.http_workers)
            run.restart_at, restarted = time.monotonic(), True
        sockets.append((SPANS[run.span(now)] if killed else SPANS[0], [open_sockets(n.ws_port) for n in nodes]))
        await asyncio.sleep(1)


async def drive(base: str, credentials, args, node: Node, env: dict, logs: Path, nodes: list[Node],
                sockets: list) -> Run:
    run = Run(start=time.monotonic(), start_wall=time.time())
    run.kill_at = run.restart_at = float("inf")
    stop_at, give_up = run.start + args.seconds, run.start + args.seconds + 60
    ws_base = "ws://" + base.split("://", 1)[1]
    browsers = [Browser(base, Stats(), token) for token, _ in credentials]
    try:
        chaos_task = asyncio.create_task(chaos(run, node, env, logs, args, sockets, nodes))
        delays = [args.ramp * i / len(credentials) for i in range(len(credentials))]
        await asyncio.gather(*(annotator(run, b, cookie, ws_base, args, stop_at, give_up, d)
                               for b, (_, cookie), d in zip(browsers, credentials, delays, strict=True)))
        await chaos_task
    finally:
        await asyncio.gather(*(b.close() for b in browsers))
    return run


# --- the report ------------------------------------------------------------------------------------------------------


LOG_LINE = re.compile(r'^(?P<ended>\S+) (?P<took>\S+) (?P<status>\d+) "(?P<upstream>[^"]*)" \S+ (?P<uri>\S+)')


def proxy_log(path: Path, nodes: list[Node], run: Run) -> tuple[list[Counter], list[Counter], int]:
    """From nginx's log: the HTTP requests each node answered per span, the WebSockets each node took per span (a
    socket's line is written when it closes, with its duration: counted when it opened), and the HTTP requests to
    the killed node in flight at the kill."""
    per_span: list[Counter] = [Counter() for _ in SPANS]
    sockets_per_span: list[Counter] = [Counter() for _ in SPANS]
    in_flight_killed = 0
    names = {f"127.0.0.1:{port}": node.name for node in nodes for port in (node.http_port, node.ws_port)}
    for line in path.read_text().splitlines():
        match = LOG_LINE.match(line)
        if not match:
            continue
        ended, took = float(match["ended"]), float(match["took"])
        tried = [names.get(address.strip(), "?") for address in match["upstream"].split(",")
                 if address.strip() not in ("", "-")]
        if not tried:
            continue
        if match["uri"].startswith("/ws/"):
            if match["status"] == "101":
                sockets_per_span[run.span(run.start + (ended - took - run.start_wall))][tried[-1]] += 1
            continue
        if tried[0] == nodes[0].name and ended - took <= run.kill_wall <= ended:
            in_flight_killed += 1
        per_span[run.span(run.start + (ended - run.start_wall))][tried[-1]] += 1
    return per_span, sockets_per_span, in_flight_killed


def report(run: Run, per_span, sockets_per_span, in_flight_killed: int, sockets, lost: dict[str, int], doubled: int,
           nodes: list[Node]) -> None:
    r = run.reconnect_s
    print(f"\nWebSocket reconnects: {len(r)}; p50 {percentile(r, 0.5):.2f} s, p95 {percentile(r, 0.95):.2f} s, "
          f"max {max(r or [0]):.2f} s (target p95 <= 2 s)")
    print(f"drafts checked before submit: {run.drafts_checked}; drafts lost: {run.drafts_lost}")
    print(f"submits answered: {len(run.acknowledged)}; Retry pressed: {run.retries}")
    print("rounds lost by kind (soak.py's check): " + ", ".join(f"{kind} {n}" for kind, n in lost.items()))
    print(f"rounds lost: {lost['unfinished'] + lost['submit without its round']}")
    print(f"duplicate rounds: {doubled} (two rounds with one session and index, or with one client_request_id)")
    print(f"HTTP 5xx: {run.server_errors} (requests in flight through the proxy at the kill: {run.in_flight_at_kill}, "
          f"of them to the killed node by nginx's log: {in_flight_killed})")
    print(f"client errors: {dict(run.errors) or 0}")
    print(f"\n{'span':<20}{'next n':>8}{'next p95':>10}{'submit n':>10}{'submit p95':>12}   "
          + "   ".join(f"{n.name}: requests / sockets opened / most open" for n in nodes))
    for index, span in enumerate(SPANS):
        nxt = [ms for when, ms in run.next_ms if run.span(when) == index]
        sub = [ms for when, ms in run.submit_ms if run.span(when) == index]
        samples = [counts for name, counts in sockets if name == span]
        peak = [max((counts[i] for counts in samples), default=0) for i in range(len(nodes))]
        spread = "   ".join(f"{per_span[index][n.name]:>17} / {sockets_per_span[index][n.name]:>4} / {peak[i]:<10}"
                           for i, n in enumerate(nodes))
        print(f"{span:<20}{len(nxt):>8}{percentile(nxt, 0.95):>10.1f}{len(sub):>10}{percentile(sub, 0.95):>12.1f}   "
              f"{spread}")
    print("(ms; per node: the HTTP requests it answered, the WebSockets it took (by nginx's log) and the most open on\n"
          " it at once (sampled each second); a page's socket stays on its node until its item ends)")


def main() -> None:
    args = parse_args()
    nginx = ensure_nginx()
    var_dir = ROOT / "var" / "failover_bench"
    logs = var_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    lock = (var_dir / "run.lock").open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit("another failover run is in progress (var/failover_bench/run.lock)")
    database_url, scratch = scratch_database(args.database_url, False, suffix=f"_failover_{os.getpid()}")
    env = configure(database_url, var_dir)
    procs: list[subprocess.Popen] = []
    nodes = [Node("node-a", free_port(), free_port()), Node("node-b", free_port(), free_port())]
    proxy_dir = Path(tempfile.mkdtemp(prefix="failover-nginx-"))
    try:
        _, credentials = create_data(args.tasks, args.annotators, reuse=False)
        _soak_settings(argparse.Namespace(chunk_delay=args.chunk_delay))
        from django.conf import settings

        from annotate.server import embedded_redis

        embedded_redis.ensure_running(settings.VAR_DIR)
        procs += [start_worker(env, logs, args.celery_concurrency), start_beat(env, var_dir, logs)]
        for node in nodes:
            node.start(env, logs, args.http_workers)
        port = free_port()
        procs.append(start_nginx(nginx, render_nginx(proxy_dir, port, nodes, args.upstream_options), port, logs))
        base = f"http://127.0.0.1:{port}"
        upstream = f", upstream servers with {args.upstream_options!r}" if args.upstream_options else ""
        print(f"proxy: nginx on {base} (docker/nginx-split.conf, two upstreams{upstream}); 2 nodes of gunicorn "
              f"({args.http_workers} sync processes) + uvicorn (1); 1 Celery worker (-c {args.celery_concurrency}) and beat; {args.annotators} "
              f"annotators; {node_kill_plan(args)}; {os.cpu_count()} CPUs", flush=True)
        sockets: list = []
        run = run_client(drive(base, credentials[1:], args, nodes[0], env, logs, nodes, sockets))
        drain(args.drain)
        per_span, sockets_per_span, in_flight_killed = proxy_log(proxy_dir / "access.log", nodes, run)
        report(run, per_span, sockets_per_span, in_flight_killed, sockets, lost_rounds(run.acknowledged), doubled_rounds(), nodes)
    finally:
        for node in nodes:
            procs += node.procs
        tear_down(procs, var_dir, args.database_url, scratch)
        for name in ("access.log", "error.log"):  # kept with the other logs, for a look at each request's node
            if (proxy_dir / name).exists():
                shutil.copy(proxy_dir / name, logs / f"nginx-{name}")
        shutil.rmtree(proxy_dir, ignore_errors=True)


def node_kill_plan(args) -> str:
    return (f"node-a killed at {args.kill_at:g} s and started again at {args.restart_at:g} s of {args.seconds:g} s "
            f"(database {urlsplit(args.database_url).path.lstrip('/')}_failover_<pid>, dropped at the end)")


if __name__ == "__main__":
    main()
