"""Server-Timing: every HTTP response says how long the app took; other protocols pass through untouched."""

import asyncio

from annotate.server.timing import ServerTimingMiddleware
from tests.annotate.helpers import run_isolated


async def _app(scope, receive, send):
    if scope["type"] == "http":
        await asyncio.sleep(0.02)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})
    else:
        await send({"type": "websocket.accept"})


def _call(scope_type: str) -> list[dict]:
    sent = []

    async def receive():
        return {}

    async def send(message):
        sent.append(message)

    run_isolated(lambda: ServerTimingMiddleware(_app)({"type": scope_type}, receive, send))
    return sent


def test_http_response_carries_the_app_time():
    start, body = _call("http")
    headers = dict(start["headers"])
    assert headers[b"content-type"] == b"text/plain"  # the app's own headers are kept
    name, _, duration = headers[b"server-timing"].decode().partition(";dur=")
    assert name == "app" and float(duration) >= 20  # at least the app's 20 ms
    assert body == {"type": "http.response.body", "body": b"ok"}


def test_websocket_messages_pass_through_unchanged():
    assert _call("websocket") == [{"type": "websocket.accept"}]
