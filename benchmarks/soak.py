"""Soak: 200 simulated annotators for ``--minutes`` on PostgreSQL while the model worker is killed (SIGKILL) every
two minutes and a new one started (no typed feedback is ever lost; a killed worker's round is retried, not
dropped).

Usage:
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/soak.py [--minutes 10]
  ... --annotators 50   fewer annotators on a busy machine
  ... --kill-every 120  seconds between two worker kills

What runs: a scratch database (``<name>_soak_bench``, dropped at the end unless ``--keep``) with a batch of
``--tasks`` tasks x 1 simulated model (3 feedback rounds, answers streamed in chunks, so that a kill catches rounds
mid-generation), the ASGI server, one Celery worker on the model and default queues, ``celery beat`` (the periodic
tasks of settings.CELERY_BEAT_SCHEDULE, among them the stalled-round reaper) and an embedded Redis, started as in
``queue_load.py`` (whose HTTP/WebSocket client and process code this reuses). Each annotator loops: next item, wait
for the model on the session's WebSocket, type feedback (with draft autosaves), submit with a client_request_id
(sent again with the same id after an error), wait, ... until the session completes or its rounds are used up. A
failed answer is retried with the page's Retry button; a session silent for ``--stall`` s is reloaded
(GET /api/sessions/<id>/, as a person would). After ``--minutes`` no new item or submit is started; in-flight rounds
get ``--drain`` s to finish, then the database is checked.

A *lost round* is any of:
  - a round of the soak's batch that, after the drain, is neither DONE nor FAILED in a session shown as FAILED (the
    page's Retry state): it is queued or running with no worker ever going to finish it, or failed without the
    annotator being offered a Retry;
  - a submit the client got 201 for whose client_request_id has no round, or more than one round;
  - a completed session whose round indices are not exactly 0..k (a missing or doubled round).

Prints, per minute of the run, the number and p95 (ms) of next-item and submit requests and the worker kills in that
minute; then the counts of retries, reloads and client errors; the last two lines are exactly ``lost rounds: N`` and
``5xx: N`` (HTTP responses with a status >= 500 seen by the annotators); both must be 0.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.figures import percentile  # noqa: E402
from benchmarks.load_client import Browser, SocketWaiter, Stats, next_item, run_client  # noqa: E402
from benchmarks.queue_load import (  # noqa: E402
    BATCH_NAME,
    configure,
    create_data,
    scratch_database,
    start_processes,
    start_worker,
    tear_down,
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--annotators", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--kill-every", type=float, default=120, help="seconds between two worker kills")
    parser.add_argument("--think", type=float, default=10.0, help="mean seconds to type a feedback (0.5x-1.5x)")
    parser.add_argument("--ramp", type=float, default=15.0, help="annotators start over this many seconds")
    parser.add_argument("--stall", type=float, default=30.0,
                        help="seconds without news before an annotator reloads the session")
    parser.add_argument("--drain", type=float, default=90.0, help="seconds given to in-flight rounds at the end")
    parser.add_argument("--chunk-delay", type=float, default=0.05, help="the simulated model's delay per chunk (s)")
    parser.add_argument("--visibility-timeout", type=int, default=None,
                        help="CELERY_VISIBILITY_TIMEOUT of the worker (default: the application's, 900 s)")
    parser.add_argument("--web-workers", type=int, default=max(2, os.cpu_count() or 2), help="ASGI processes")
    parser.add_argument("--celery-concurrency", type=int, default=2)
    parser.add_argument("--pool", type=int, default=8, help="DB_POOL_MAX_SIZE of the web processes")
    parser.add_argument("--server", choices=["uvicorn", "daphne"], default="uvicorn")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    return parser.parse_args()


# --- what the annotators saw -----------------------------------------------------------------------------------------


@dataclass
class Soak:
    start: float
    next_ms: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))  # per minute of the run
    submit_ms: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    kills: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    acknowledged: set[str] = field(default_factory=set)  # client_request_ids of the submits answered 201
    server_errors: int = 0
    client_errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    retries: int = 0
    reloads: int = 0
    sessions: int = 0

    def minute(self) -> int:
        return int((time.monotonic() - self.start) // 60)


async def call(soak: Soak, browser: Browser, method: str, path: str, payload: dict | None = None):
    """One request; a 5xx is counted (the soak's second figure) and handed back like any reply."""
    reply = await browser.call(method, path, payload)
    if reply.status >= 500:
        soak.server_errors += 1
    return reply


async def wait_model(soak: Soak, browser: Browser, waiter: SocketWaiter, session_url: str, stall: float,
                     give_up: float) -> str:
    """Wait until the model has answered (the session awaits feedback, or is done); a failure is retried with the
    Retry button, a long silence answered with a reload."""
    while time.monotonic() < give_up:
        status = await waiter.wait({"awaiting_feedback", "awaiting_verdict", "completed"}, timeout=stall)
        if status == "failed":
            soak.retries += 1
            reply = await call(soak, browser, "POST", session_url + "retry/")
            if reply.status not in (200, 409):  # 409: someone (a reaper) already queued it again
                soak.client_errors[f"retry {reply.status}"] += 1
                await asyncio.sleep(1)
            continue
        if status == "stalled":  # the page looks frozen: the annotator reloads it
            soak.reloads += 1
            reply = await call(soak, browser, "GET", session_url)
            if reply.status == 200 and (state := reply.json()["status"]) != "generating":
                if state == "failed":
                    continue
                return state
            continue
        return status
    return "gave up"


async def submit(soak: Soak, browser: Browser, session_url: str, payload: dict) -> bool:
    """Send the feedback; after an error, the same submit again (same client_request_id), as the page does."""
    for _ in range(10):
        reply = await call(soak, browser, "POST", session_url + "feedback/", payload)
        if reply.status == 201:
            soak.submit_ms[soak.minute()].append(reply.ms)
            soak.acknowledged.add(payload["client_request_id"])
            return True
        soak.client_errors[f"submit {reply.status}"] += 1
        await asyncio.sleep(1)
    return False


async def annotator(soak: Soak, browser: Browser, cookie: str, ws_base: str, args, stop_at: float,
                    give_up: float, start_delay: float) -> None:
    import aiohttp

    origin = "http://" + ws_base.split("://", 1)[1]
    await asyncio.sleep(start_delay)
    while time.monotonic() < stop_at:
        try:
            reply = await next_item(lambda: call(soak, browser, "POST", "/api/next/", {"batch": BATCH_NAME}),
                                    soak.client_errors)
            if reply == "done":
                return
            if reply is None:
                continue
            soak.next_ms[soak.minute()].append(reply.ms)
            soak.sessions += 1
            session_id = reply.json()["session_id"]
            session_url = f"/api/sessions/{session_id}/"
            async with SocketWaiter(browser, f"{ws_base}/ws/sessions/{session_id}/", origin, cookie) as waiter:
                status = await wait_model(soak, browser, waiter, session_url, args.stall, give_up)
                while status == "awaiting_feedback" and time.monotonic() < stop_at:
                    typed = ""
                    for _ in range(2):  # typing, with the page's autosaves
                        await asyncio.sleep(random.uniform(0.25, 0.75) * args.think)
                        typed += "Count again, carefully. "
                        if error := await waiter.save_draft(typed):
                            soak.client_errors[error] += 1
                    payload = {"feedback": typed.strip(), "client_request_id": uuid.uuid4().hex}
                    if not await submit(soak, browser, session_url, payload):
                        break
                    status = await wait_model(soak, browser, waiter, session_url, args.stall, give_up)
            await asyncio.sleep(random.uniform(0.5, 1.5) * args.think / 2)  # reading the outcome
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            soak.client_errors[type(error).__name__] += 1
            await asyncio.sleep(1)


async def worker_killer(soak: Soak, procs: list[subprocess.Popen], env: dict, logs: Path, args,
                        stop_at: float) -> None:
    """Every ``--kill-every`` s: SIGKILL the worker's whole process group, then start a new one."""
    while time.monotonic() + args.kill_every < stop_at:
        await asyncio.sleep(args.kill_every)
        os.killpg(procs[1].pid, signal.SIGKILL)
        procs[1].wait()
        soak.kills[soak.minute()] += 1
        procs[1] = start_worker(env, logs, args.celery_concurrency, log_mode="ab")


async def run(base: str, ws_base: str, credentials, procs, env, logs, args) -> Soak:
    soak = Soak(start=time.monotonic())
    stop_at = soak.start + args.minutes * 60
    give_up = stop_at + args.drain
    browsers = [Browser(base, Stats(), token) for token, _ in credentials]
    try:
        killer = asyncio.create_task(worker_killer(soak, procs, env, logs, args, stop_at))
        delays = [args.ramp * i / len(credentials) for i in range(len(credentials))]
        await asyncio.gather(*(annotator(soak, browser, cookie, ws_base, args, stop_at, give_up, delay)
                               for browser, (_, cookie), delay in zip(browsers, credentials, delays, strict=True)))
        killer.cancel()
    finally:
        await asyncio.gather(*(browser.close() for browser in browsers))
    return soak


# --- the check -------------------------------------------------------------------------------------------------------


def drain(seconds: float) -> None:
    """Give the rounds still queued or running up to ``seconds`` to finish (the annotators have stopped)."""
    from annotate.models import Round

    pending = Round.objects.filter(session__batch__name=BATCH_NAME,
                                   generation_status__in=[Round.Generation.QUEUED, Round.Generation.RUNNING])
    deadline = time.monotonic() + seconds
    while pending.exists() and time.monotonic() < deadline:
        time.sleep(1)


def lost_rounds(acknowledged: set[str]) -> dict[str, int]:
    """The lost rounds by kind (see the module's docstring)."""
    from django.db.models import Count

    from annotate.models import Round, Session

    rounds = Round.objects.filter(session__batch__name=BATCH_NAME)
    unfinished = rounds.exclude(generation_status=Round.Generation.DONE).exclude(
        generation_status=Round.Generation.FAILED, session__status=Session.Status.FAILED)
    saved = dict(rounds.filter(client_request_id__in=acknowledged).values("client_request_id")
                 .annotate(n=Count("id")).values_list("client_request_id", "n"))
    missing = sum(1 for request_id in acknowledged if request_id not in saved)
    doubled = sum(n - 1 for n in saved.values() if n > 1)
    gaps = 0
    completed = Session.objects.filter(batch__name=BATCH_NAME, status=Session.Status.COMPLETED)
    for indices in _round_indices(completed):
        gaps += len(set(range(max(indices) + 1)) - set(indices)) + len(indices) - len(set(indices))
    return {"unfinished": unfinished.count(), "submit without its round": missing,
            "doubled submit": doubled, "missing or doubled index in a completed session": gaps}


def _round_indices(sessions) -> list[list[int]]:
    from annotate.models import Round

    by_session: dict[int, list[int]] = defaultdict(list)
    for session_id, index in Round.objects.filter(session__in=sessions).values_list("session_id", "index"):
        by_session[session_id].append(index)
    return list(by_session.values())


def report(soak: Soak, lost: dict[str, int], args) -> None:
    print(f"\n{'minute':>6}{'next n':>9}{'next p95':>10}{'submit n':>10}{'submit p95':>12}{'kills':>7}   (ms)")
    for minute in range(int(args.minutes + 0.999)):
        nxt, sub = soak.next_ms.get(minute, []), soak.submit_ms.get(minute, [])
        print(f"{minute + 1:>6}{len(nxt):>9}{percentile(nxt, 0.95):>10.1f}{len(sub):>10}"
              f"{percentile(sub, 0.95):>12.1f}{soak.kills.get(minute, 0):>7}")
    print(f"\nsessions started: {soak.sessions}; submits answered: {len(soak.acknowledged)}; "
          f"worker kills: {sum(soak.kills.values())}")
    print(f"Retry pressed: {soak.retries}; reloads after {args.stall:g} s of silence: {soak.reloads}; "
          f"client errors: {dict(soak.client_errors) or 0}")
    print("lost rounds by kind: " + ", ".join(f"{kind} {n}" for kind, n in lost.items()))
    print(f"lost rounds: {sum(lost.values())}")
    print(f"5xx: {soak.server_errors}")


def start_beat(env: dict, var_dir: Path, logs: Path) -> subprocess.Popen:
    """celery beat: the periodic tasks (the stalled-round reaper among them) go to the default queue."""
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "annotate", "beat", "--loglevel", "WARNING",
         "-s", str(var_dir / "celerybeat-schedule")],
        cwd=ROOT, env=env, stdout=(logs / "beat.log").open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
    )


def main() -> None:
    args = parse_args()
    if not args.database_url:
        sys.exit("Set DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres) or pass --database-url")
    var_dir = ROOT / "var" / "soak_bench"
    var_dir.mkdir(parents=True, exist_ok=True)
    lock = (var_dir / "run.lock").open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit("another soak run is in progress (var/soak_bench/run.lock)")
    database_url, scratch = scratch_database(args.database_url, False, suffix="_soak_bench")
    env = configure(database_url, var_dir)
    if args.visibility_timeout is not None:
        env["CELERY_VISIBILITY_TIMEOUT"] = str(args.visibility_timeout)
    procs: list[subprocess.Popen] = []
    try:
        _, credentials = create_data(args.tasks, args.annotators, reuse=False)
        _soak_settings(args)
        procs, base, ws_base, described = start_processes(env, var_dir, args)
        logs = var_dir / "logs"
        procs.append(start_beat(env, var_dir, logs))
        print(f"server: {described}; celery beat; {args.annotators} annotators for {args.minutes:g} min, the "
              f"worker killed every {args.kill_every:g} s (visibility timeout "
              f"{env.get('CELERY_VISIBILITY_TIMEOUT', 'default')}); {os.cpu_count()} CPUs", flush=True)
        soak = run_client(run(base, ws_base, credentials[1:], procs, env, logs, args))
        drain(max(0.0, soak.start + args.minutes * 60 + args.drain - time.monotonic()))
        report(soak, lost_rounds(soak.acknowledged), args)
    finally:
        tear_down(procs, var_dir, args.database_url, None if args.keep else scratch)


def _soak_settings(args) -> None:
    """The load test's batch, made for the soak: three feedback rounds, a model that takes its time."""
    from annotate.models import Batch, ModelConfig

    Batch.objects.filter(name=BATCH_NAME).update(max_rounds=3)
    ModelConfig.objects.filter(name="bench-sim").update(backend_settings={"chunk_delay": args.chunk_delay})


if __name__ == "__main__":
    main()
