"""ASGI and WSGI wrappers that tell each HTTP response how long the app took: ``Server-Timing: app;dur=<ms>``.

The time runs from the request reaching the app to the response's headers, so a client (the browser's devtools,
the queue_load benchmark) can tell the server's share of a latency from the network's and its own.
"""

from __future__ import annotations

import time


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


class WsgiServerTiming:
    """The same header for the WSGI side of a split deployment (gunicorn serving HTTP)."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        start = time.perf_counter()

        def timed_start_response(status, headers, exc_info=None):
            return start_response(status, [*headers, ("Server-Timing", server_timing(start))], exc_info)

        return self.app(environ, timed_start_response)
