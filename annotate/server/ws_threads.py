"""Where the WebSockets' database calls run: never in the one thread asgiref shares per process.

Channels runs the ORM through ``database_sync_to_async``, which is thread-sensitive: inside an HTTP request Django
opens an asgiref ``ThreadSensitiveContext`` per request, so such calls run in that request's thread; outside any
context (a WebSocket) they all run in the one thread asgiref keeps per process. Every socket of a web process then
waits behind every other socket's queries: the session and user lookups of Channels' auth stack on connect, the
consumer's snapshots and draft autosaves. Under 1,000 annotators that one thread was the web tier's queue (draft
autosave p95 3.5 s, p99 9 s: benchmarks/results/2026-11-26.md).

``ThreadPerSocket`` opens a ``ThreadSensitiveContext`` (asgiref's public API, the one Django's ASGI handler uses per
request) around each connection: the auth stack's lookups on connect run in a thread of that connection, which
ends with it. The consumers' own calls (snapshots, draft autosaves: most of the traffic) go through
``database_call`` instead: a pool of as many threads as the process has database connections, so at most that
many run at once and the rest wait their turn in the event loop, not as hundreds of threads contending for the
GIL while holding pooled connections (1,000 annotators with a thread per socket: pool waits of 5.9 s on average).
Each socket still awaits its calls one at a time, in order.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import cache

from asgiref.sync import ThreadSensitiveContext
from channels.db import database_sync_to_async
from django.conf import settings


class ThreadPerSocket:
    """ASGI middleware: each WebSocket connection's thread-sensitive calls run in a thread of that connection."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        async with ThreadSensitiveContext():
            return await self.app(scope, receive, send)


@cache
def _executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=settings.DB_POOL_MAX_SIZE or 4, thread_name_prefix="socket-db")


def database_call(func):
    """``database_sync_to_async`` (connections closed or given back to the pool after each call) on the sockets'
    bounded pool of threads."""
    return database_sync_to_async(func, thread_sensitive=False, executor=_executor())
