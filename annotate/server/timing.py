"""ASGI and WSGI wrappers that tell each HTTP response how long the app took: ``Server-Timing: app;dur=<ms>``.

The time runs from the request reaching the app to the response's headers, so a client (the browser's devtools,
the queue_load benchmark) can tell the server's share of a latency from the network's and its own.

With ``SERVER_TIMING_DETAIL`` on (benchmarks only), the WSGI side also says what the request cost: the CPU time of
its thread (``cpu;dur=<ms>``) and its database queries (``db;dur=<ms in queries>;desc="<n> queries"``). Off by
default: a count of queries could tell a participant an attention check from an ordinary item.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


def server_timing(start: float) -> str:
    """The header's value for an app that started at ``start`` (``time.perf_counter()``)."""
    return f"app;dur={(time.perf_counter() - start) * 1000:.1f}"


class ServerTimingMiddleware:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()

        async def timed_send(message):
            if message["type"] == "http.response.start":
                timing = (b"server-timing", server_timing(start).encode())
                message = {**message, "headers": [*message.get("headers", []), timing]}
            await send(message)

        return await self.app(scope, receive, timed_send)


@dataclass
class QueryCounter:
    """A database execute wrapper (Django's public ``connection.execute_wrapper``) counting queries and their time."""

    count: int = 0
    seconds: float = 0.0

    def __call__(self, execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.count += 1
            self.seconds += time.perf_counter() - start


class WsgiServerTiming:
    """The same header for the WSGI side of a split deployment (gunicorn serving HTTP); with ``detail``, the
    request's CPU and queries too. A WSGI request runs on one thread from start to end, so its thread's CPU time
    and its connection's queries are its own."""

    def __init__(self, app, *, detail: bool = False):
        self.app, self.detail = app, detail

    def __call__(self, environ, start_response):
        start, cpu_start = time.perf_counter(), time.thread_time()
        queries = QueryCounter() if self.detail else None

        def timed_start_response(status, headers, exc_info=None):
            timing = server_timing(start)
            if queries is not None:
                timing += (f", cpu;dur={(time.thread_time() - cpu_start) * 1000:.1f}, "
                           f'db;dur={queries.seconds * 1000:.1f};desc="{queries.count} queries"')
            return start_response(status, [*headers, ("Server-Timing", timing)], exc_info)

        if queries is None:
            return self.app(environ, timed_start_response)
        from django.db import connection

        with connection.execute_wrapper(queries):
            return self.app(environ, timed_start_response)
