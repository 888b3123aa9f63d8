"""The simulated annotators of ``queue_load.py`` and ``soak.py``: each an HTTP client with its own keep-alive
connection and, while it waits for the model, the session's WebSocket, as the session page holds them.

``run_phase_in_processes`` spreads the annotators over client processes of their own, so the load generator does
not share an event loop (or a GIL) with anything it measures, and each process reports the CPU it used.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import random
import time
import uuid
from dataclasses import dataclass, field, fields

LAG_SAMPLE_SECONDS = 0.05
QUIET_SECONDS, QUIET_SECONDS_MAX = 10.0, 40.0  # as SNAPSHOT_AFTER_QUIET_MS and its _MAX_MS in static/js/session.js
ANNOTATORS_PER_CLIENT = 250  # per client process by default: its event loop's lag stays a few ms at 1,000


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
    # What each request cost the app, (CPU ms, queries, ms in queries), where it says (SERVER_TIMING_DETAIL).
    next_first_cost: list[tuple[float, int, float]] = field(default_factory=list)
    next_later_cost: list[tuple[float, int, float]] = field(default_factory=list)
    submit_cost: list[tuple[float, int, float]] = field(default_factory=list)
    draft_cost: list[tuple[float, int, float]] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    # The client's own event-loop lag, sampled every LAG_SAMPLE_SECONDS: a client running late adds that much to
    # every latency it measures, though no server made it wait (here the clients share the server's cores).
    loop_lag: list[float] = field(default_factory=list)
    cycles: int = 0
    requests: int = 0

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1

    def merge(self, other: Stats) -> None:
        """Add another client process's figures to these."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, list):
                mine.extend(theirs)
            elif isinstance(mine, dict):
                for key, count in theirs.items():
                    mine[key] = mine.get(key, 0) + count
            else:
                setattr(self, f.name, mine + theirs)


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
        return float(self.server_timing.partition("dur=")[2].partition(",")[0] or "nan")

    @property
    def cost(self) -> tuple[float, int, float] | None:
        """(CPU ms, queries, ms in queries) of the request, from ``cpu;dur=<ms>`` and
        ``db;dur=<ms>;desc="<n> queries"`` (None: the server does not say)."""
        cpu = self.server_timing.partition("cpu;dur=")[2].partition(",")[0]
        db = self.server_timing.partition("db;dur=")[2].partition(";")[0]
        queries = self.server_timing.partition('desc="')[2].partition(" ")[0]
        return (float(cpu), int(queries), float(db)) if cpu and queries and db else None


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
        quiet, last_snapshot = QUIET_SECONDS, None
        while time.monotonic() < give_up:
            try:
                event = await self.receive(quiet)
            except TimeoutError:  # as the page: each quiet spell that brought nothing new doubles the next
                await self.ws.send_str(json.dumps({"type": "snapshot"}))
                quiet = min(2 * quiet, QUIET_SECONDS_MAX)
                continue
            if event.get("type") == "chunk":
                quiet = QUIET_SECONDS
            if event.get("type") == "snapshot":
                if event["session"] != last_snapshot:
                    quiet, last_snapshot = QUIET_SECONDS, event["session"]
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
        if response.cost:
            self.stats.draft_cost.append(response.cost)
        return None


async def next_item(ask, errors: dict[str, int]) -> Reply | str | None:
    """Ask for the next item as the page does (``ask()`` sends the request): the reply when an item was reserved;
    None after waiting when the queue said wait or the request failed (counted in ``errors``); "done" when there is
    nothing left for this annotator."""
    reply = await ask()
    if reply.status == 200 and reply.json()["state"] == "done":
        return "done"
    if reply.status == 200 and reply.json()["state"] == "wait":
        await asyncio.sleep(reply.json()["retry_after"])
        return None
    if reply.status != 200:
        errors[f"next {reply.status}"] = errors.get(f"next {reply.status}", 0) + 1
        await asyncio.sleep(1)
        return None
    return reply


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
            response = await next_item(lambda: browser.call("POST", "/api/next/", {"batch": batch}), stats.errors)
            if response == "done":
                return
            if response is None:
                continue
            stats.next.append(response.ms)
            stats.next_server.append(response.server_ms)
            (stats.next_first if first_item else stats.next_later).append(response.ms)
            if response.cost:
                (stats.next_first_cost if first_item else stats.next_later_cost).append(response.cost)
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
                if response.cost:
                    stats.submit_cost.append(response.cost)
                status = await waiter.wait({"completed"})  # the model re-answers with the ground truth
                if status != "completed":
                    stats.error(f"round 1 {status}")
                    continue
            stats.cycles += 1
            await pause()  # reading the outcome before the next item
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            stats.error(type(error).__name__)
            await asyncio.sleep(1)


async def watch_loop_lag(lags: list[float]) -> None:
    """How late this event loop wakes a sleeper (ms), every LAG_SAMPLE_SECONDS until cancelled."""
    while True:
        asked = time.monotonic()
        await asyncio.sleep(LAG_SAMPLE_SECONDS)
        lags.append((time.monotonic() - asked - LAG_SAMPLE_SECONDS) * 1000)


async def run_phase(base: str, ws_base: str, batch: str, credentials: list[tuple[str, str]], *, seconds: float,
                    think: float, ramp: float, max_cycles: int, wait: str, poll: float,
                    delays: list[float] | None = None, start_at: float | None = None) -> tuple[Stats, float]:
    """The annotators' loops in this process. ``delays`` (each annotator's start after ``start_at``, a
    ``time.monotonic()`` reading shared by every client process) default to starts spread evenly over ``ramp``."""
    stats = Stats()
    # One client (one keep-alive connection) per annotator, as each browser has its own: a single shared pool of
    # 200 connections costs the client more than the server and its waits would count as latency.
    browsers = [Browser(base, stats, token) for token, _ in credentials]
    if delays is None:
        delays = [ramp * i / len(credentials) for i in range(len(credentials))]
    try:
        if start_at is not None:
            await asyncio.sleep(max(0.0, start_at - time.monotonic()))
        start = time.monotonic()
        deadline = start + seconds
        watcher = asyncio.create_task(watch_loop_lag(stats.loop_lag))
        await asyncio.gather(*(annotator_loop(browser, cookie, batch, ws_base, deadline, think, max_cycles, d,
                                              wait, poll)
                               for browser, (_, cookie), d in zip(browsers, credentials, delays, strict=True)))
        elapsed = time.monotonic() - start
        watcher.cancel()
    finally:
        await asyncio.gather(*(browser.close() for browser in browsers))
    return stats, elapsed


def _client_process(kwargs: dict, results) -> None:
    """One client process: its share of the annotators on an event loop of its own; sends back its figures and
    the CPU seconds it used (user + system)."""
    before = os.times()
    stats, elapsed = run_client(run_phase(**kwargs), freeze=False)
    after = os.times()
    results.put((stats, elapsed, (after.user - before.user) + (after.system - before.system)))


@dataclass
class ClientProcesses:
    """What the client processes of a phase did: their merged figures and the CPU each used."""

    stats: Stats
    elapsed: float
    cpu_seconds: list[float]

    def describe(self) -> str:
        return (f"{len(self.cpu_seconds)} client process(es), CPU "
                + " + ".join(f"{100 * s / self.elapsed:.0f}%" for s in self.cpu_seconds)
                + f" = {100 * sum(self.cpu_seconds) / self.elapsed:.0f}% of one core")


def run_phase_in_processes(base: str, ws_base: str, batch: str, credentials: list[tuple[str, str]], *,
                           processes: int = 0, seconds: float, think: float, ramp: float, max_cycles: int,
                           wait: str, poll: float) -> ClientProcesses:
    """The annotators spread over ``processes`` client processes (0: one per ``ANNOTATORS_PER_CLIENT``), each a
    fresh interpreter (spawned: no Django, no copy of this process's heap); starts are spread over ``ramp`` across
    all of them, and every process runs for ``seconds`` from one shared start."""
    processes = processes or math.ceil(len(credentials) / ANNOTATORS_PER_CLIENT)
    processes = max(1, min(processes, len(credentials)))
    delays = [ramp * i / len(credentials) for i in range(len(credentials))]
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    start_at = time.monotonic() + 3.0  # time for every process to start (CLOCK_MONOTONIC is system-wide)
    children = []
    for k in range(processes):
        share = slice(k, None, processes)  # interleaved: each process starts annotators all along the ramp
        kwargs = {"base": base, "ws_base": ws_base, "batch": batch, "credentials": credentials[share],
                  "seconds": seconds, "think": think, "ramp": ramp, "max_cycles": max_cycles, "wait": wait,
                  "poll": poll, "delays": delays[share], "start_at": start_at}
        child = context.Process(target=_client_process, args=(kwargs, results), name=f"load-client-{k}", daemon=True)
        child.start()
        children.append(child)
    merged, cpu = Stats(), []
    elapsed = 0.0
    for _ in children:
        stats, took, used = results.get(timeout=seconds + 300)
        merged.merge(stats)
        elapsed, cpu = max(elapsed, took), [*cpu, used]
    for child in children:
        child.join(timeout=30)
    return ClientProcesses(merged, elapsed, cpu)


def run_client(coroutine, freeze: bool = True):
    """Run the simulated annotators on uvloop when it is installed (it comes with uvicorn[standard]): the client
    shares the server's cores here, while real annotators each have a browser of their own, so the less CPU
    (and event-loop lag, which counts in every latency) the client costs, the more the figures are the server's."""
    if freeze:
        from annotate.server.heap import freeze_startup_heap

        # A client that loaded Django to make the data: frozen like the web processes' heap, it costs no collector
        # pauses, which would count in the figures.
        freeze_startup_heap()
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)

