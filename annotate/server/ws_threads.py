"""A thread of its own for each WebSocket's database calls, as Django gives each HTTP request.

Channels runs the ORM through ``database_sync_to_async``, which is thread-sensitive: inside an HTTP request Django
opens an asgiref ``ThreadSensitiveContext`` per request, so such calls run in that request's thread; outside any
context (a WebSocket) they all run in the one thread asgiref keeps per process. Every socket of a web process then
waits behind every other socket's queries: the session and user lookups of Channels' auth stack on connect, the
consumer's snapshots and draft autosaves. Under 1,000 annotators that one thread was the web tier's queue (draft
autosave p95 3.5 s, p99 9 s: docs/operations/scaling-out.md).

``ThreadPerSocket`` opens a ``ThreadSensitiveContext`` (asgiref's public API, the one Django's ASGI handler uses per
request) around each connection: its calls run in a thread of its own, one at a time and in order, as before, and
the thread ends with the connection. Concurrency on the database stays bounded by the connection pool.
"""

from __future__ import annotations

from asgiref.sync import ThreadSensitiveContext


class ThreadPerSocket:
    """ASGI middleware: each WebSocket connection's thread-sensitive calls run in a thread of that connection."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        async with ThreadSensitiveContext():
            return await self.app(scope, receive, send)
