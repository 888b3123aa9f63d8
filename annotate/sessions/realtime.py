"""The only module that touches the channel layer: group names and publishing.

The database is the source of truth; these events are best effort (a client that misses one reloads the
snapshot). Chunks carry per-round sequence numbers so a client can drop those already in its snapshot.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Mapping

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

SEND_TIMEOUT_SECONDS = 2.0


class _PublisherLoop:
    """One long-lived event loop thread per process for publishing from sync code (the Celery worker).

    ``async_to_sync`` would start a new thread and event loop for every call, and channels_redis keeps its
    connections per loop, so each streamed chunk paid for a new thread and a new Redis connection (tens of ms
    on a busy machine, on the path to the first chunk). One loop keeps one warm connection pool.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            # A forked child (Celery prefork) inherits the object but not the thread: start its own.
            if self._loop is None or self._pid != os.getpid():
                self._loop = asyncio.new_event_loop()
                self._pid = os.getpid()
                threading.Thread(target=self._loop.run_forever, name="realtime-publisher", daemon=True).start()
            return self._loop

    def run(self, coroutine) -> None:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop())
        try:
            future.result(SEND_TIMEOUT_SECONDS)
        except BaseException:
            future.cancel()
            raise


_publisher = _PublisherLoop()


def session_group(session_id: int) -> str:
    return f"session.{session_id}"


def _send(group: str, event: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        _publisher.run(layer.group_send(group, {"type": "relay", "event": event}))
    except Exception:  # a dead channel layer must not fail the round: the DB already has the text
        logger.warning("could not publish %s to %s", event.get("type"), group, exc_info=True)


def publish_chunk(session_id: int, round_index: int, seq: int, text: str) -> None:
    _send(session_group(session_id), {"type": "chunk", "round": round_index, "seq": seq, "text": text})


def publish_snapshot(session_id: int, snapshot: Mapping[str, object]) -> None:
    _send(session_group(session_id), {"type": "snapshot", "session": snapshot})
