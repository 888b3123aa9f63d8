"""What the session page's WebSocket costs the app, in process: CPU time of a connection (Channels' auth stack, the
group, the first snapshot), of a snapshot the page asks for on an open socket, of a draft autosave and of a
disconnect.

Usage:
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/socket_cost.py
  ... --connections 150 --generating

Each socket goes through the app's whole ASGI application (annotate.config.asgi) with Channels' test communicator
and a logged-in browser's session cookie, so the figures are the app's alone: no server, no network, no other
process's load. CPU is this process's (all its threads: the socket's database calls run in threads of their own).
``--generating`` measures a session whose model is answering, where every snapshot also checks the round for a
stopped worker (annotate.sessions.stalls). The database is a scratch one next to the given one
(``<name>_socket_cost``, dropped at the end); the channel layer is an embedded Redis.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.figures import percentile, reference_workload_ms, speed_before_and_after  # noqa: E402
from benchmarks.next_item_cost import create_data  # noqa: E402
from benchmarks.queue_load import scratch_setup, tear_down  # noqa: E402

DRAFTS_PER_SOCKET = 5
SNAPSHOTS_PER_SOCKET = 5
WARM_UP = 10  # sockets left out of the figures (first connections, statements not yet prepared)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--connections", type=int, default=150, help="sockets opened one after the other")
    parser.add_argument("--generating", action="store_true",
                        help="the session's model is answering (snapshots check the round for a stopped worker)")
    return parser.parse_args()


def a_session(token: str, generating: bool) -> tuple[int, str]:
    """The annotator's session (round 0 answered, or still running with a live heartbeat) and their browser
    session's cookie value."""
    from datetime import timedelta

    from django.conf import settings
    from django.test import Client
    from django.utils import timezone
    from rest_framework.test import APIClient

    from annotate.models import Round, Session, User

    api = APIClient(SERVER_NAME="localhost")
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    session_id = api.post("/api/next/", {}, format="json").json()["session_id"]
    if generating:
        Round.objects.filter(session_id=session_id).update(generation_status=Round.Generation.RUNNING,
                                                           heartbeat_at=timezone.now() + timedelta(hours=1))
    else:
        Round.objects.filter(session_id=session_id).update(generation_status=Round.Generation.DONE, answer_text="1",
                                                           final_verdict=False, auto_verdict=False)
        Session.objects.filter(pk=session_id).update(status=Session.Status.AWAITING_FEEDBACK)
    browser = Client()
    browser.force_login(User.objects.get(auth_token__key=token))
    return session_id, browser.cookies[settings.SESSION_COOKIE_NAME].value


async def measure(session_id: int, cookie: str, connections: int) -> dict[str, list[float]]:
    from channels.testing import WebsocketCommunicator
    from django.conf import settings

    from annotate.config.asgi import application

    headers = [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()), (b"origin", b"http://localhost"),
               (b"host", b"localhost")]
    cpu: dict[str, list[float]] = {"connect (with its snapshot)": [], "snapshot asked on the socket": [],
                                   "draft autosave": [], "disconnect": []}

    def timed(kind: str, n: int, start: float) -> None:
        if n >= WARM_UP:
            cpu[kind].append((time.process_time() - start) * 1000)

    async def answer(socket, frame: dict, expected: str) -> None:
        await socket.send_json_to(frame)
        reply = await socket.receive_json_from()
        assert reply["type"] == expected, reply

    for n in range(connections + WARM_UP):
        socket = WebsocketCommunicator(application, f"/ws/sessions/{session_id}/", headers=headers)
        start = time.process_time()
        connected, _ = await socket.connect()
        assert connected and (await socket.receive_json_from())["type"] == "snapshot"
        timed("connect (with its snapshot)", n, start)
        for i in range(DRAFTS_PER_SOCKET):
            start = time.process_time()
            await answer(socket, {"type": "draft", "draft": f"Count again {n}.{i}", "id": i}, "draft_saved")
            timed("draft autosave", n, start)
        for _ in range(SNAPSHOTS_PER_SOCKET):
            start = time.process_time()
            await answer(socket, {"type": "snapshot"}, "snapshot")
            timed("snapshot asked on the socket", n, start)
        start = time.process_time()
        await socket.disconnect()
        timed("disconnect", n, start)
    return cpu


def main() -> None:
    args = parse_args()
    os.environ.setdefault("DB_POOL_MAX_SIZE", "8")  # as a web process serving WebSockets runs (before Django starts)
    _, scratch, _, var_dir = scratch_setup(args.database_url, "socket_cost", "_socket_cost")
    from django.conf import settings
    from django.db import connections

    from annotate.server import embedded_redis

    embedded_redis.ensure_running(settings.VAR_DIR)
    try:
        session_id, cookie = a_session(create_data(2_000, 1)[0], args.generating)
        connections.close_all()  # the sockets take theirs from the pool
        speed = reference_workload_ms()
        cpu = asyncio.run(measure(session_id, cookie, args.connections))
        state = "its model answering" if args.generating else "awaiting feedback"
        print(f"{args.connections} sockets to one session ({state}); {speed_before_and_after(speed)}")
        print(f"  {'':<32}{'n':>6}{'CPU p50':>9}{'CPU p95':>9}   (ms of this process's CPU)")
        for kind, values in cpu.items():
            print(f"  {kind:<32}{len(values):>6}{percentile(values, 0.5):>9.2f}{percentile(values, 0.95):>9.2f}")
    finally:
        tear_down([], var_dir, args.database_url, scratch)


if __name__ == "__main__":
    main()
