"""The project's ASGI app with a sampler in each web process, for ``queue_load.py --probe`` only.

Every second each web process appends one JSON line to ``$QUEUE_LOAD_PROBE_DIR/probe-<pid>.jsonl``:
- ``pool``: the PostgreSQL pool's counters since the last line (psycopg_pool's ``pop_stats()``: checkouts, how many
  waited and for how long in all, how long connections were out of the pool) and its gauges;
- ``lag_ms``: how late the event loop woke from 50 ms sleeps (every coroutine of the process waits that long);
- ``ws_thread_ms``: how long a no-op waited in asgiref's process-wide thread for thread-sensitive calls made
  outside an HTTP request (where Channels' ``database_sync_to_async`` runs unless told otherwise);
- ``layer_ms``: a message's round trip through the channel layer (send to a channel of this process, receive);
- ``threads``: the process's threads.

It changes nothing in the app: the figures it prints beside the latencies tell where a request waited.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path

from annotate.config.asgi import application as app

INTERVAL = 1.0
TICK = 0.05


class Sampler:
    def __init__(self, out: Path):
        self.out = out / f"probe-{os.getpid()}.jsonl"
        self.lags: list[float] = []
        self.ws_waits: list[float] = []
        self.layer: list[float] = []
        self.task: asyncio.Task | None = None

    def start(self) -> None:
        if self.task is None:
            loop = asyncio.get_running_loop()
            self.task = loop.create_task(self.write())
            loop.create_task(self.tick())
            loop.create_task(self.tick_shared_thread())

    async def tick(self) -> None:
        while True:
            start = time.monotonic()
            await asyncio.sleep(TICK)
            self.lags.append((time.monotonic() - start - TICK) * 1000)

    async def tick_shared_thread(self) -> None:
        from asgiref.sync import SyncToAsync

        loop = asyncio.get_running_loop()
        while True:
            start = time.monotonic()
            await loop.run_in_executor(SyncToAsync.single_thread_executor, lambda: None)
            self.ws_waits.append((time.monotonic() - start) * 1000)
            await asyncio.sleep(TICK)

    async def write(self) -> None:
        from channels.layers import get_channel_layer
        from django.db import connections

        layer = get_channel_layer()
        channel = await layer.new_channel()
        last = time.monotonic()
        while True:
            await asyncio.sleep(INTERVAL)
            start = time.monotonic()
            await layer.send(channel, {"type": "probe"})
            await layer.receive(channel)
            self.layer.append((time.monotonic() - start) * 1000)
            pool = getattr(connections["default"], "pool", None)
            now = time.monotonic()
            line = {"t": time.time(), "dt": now - last, "pid": os.getpid(), "pool": pool.pop_stats() if pool else {},
                    "lag_ms": self.lags, "ws_thread_ms": self.ws_waits, "layer_ms": self.layer,
                    "threads": threading.active_count()}
            last = now
            self.lags, self.ws_waits, self.layer = [], [], []
            with self.out.open("a") as out:
                out.write(json.dumps(line) + "\n")


sampler = Sampler(Path(os.environ["QUEUE_LOAD_PROBE_DIR"]))


async def application(scope, receive, send):
    sampler.start()
    await app(scope, receive, send)
