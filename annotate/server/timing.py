"""An ASGI wrapper that tells each HTTP response how long the app took: ``Server-Timing: app;dur=<ms>``.

The time runs from the request reaching the app to the response's headers, so a client (the browser's devtools,
the queue_load benchmark) can tell the server's share of a latency from the network's and its own.
"""

from __future__ import annotations

import time


class ServerTimingMiddleware:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()

        async def timed_send(message):
            if message["type"] == "http.response.start":
                duration = f"app;dur={(time.perf_counter() - start) * 1000:.1f}".encode()
                message = {**message, "headers": [*message.get("headers", []), (b"server-timing", duration)]}
            await send(message)

        return await self.app(scope, receive, timed_send)
