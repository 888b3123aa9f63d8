"""The project's ASGI app for HTTP: Django's own handler with every middleware, Server-Timing, views loaded and frozen at
start-up."""

import asyncio
import gc
import sys

import pytest

from annotate.config.asgi import application
from tests.annotate.helpers import run_isolated


def _exchange(path: str, app=application) -> list[dict]:
    """The ASGI messages a GET of ``path`` sends back."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80)}
    sent, delivered = [], []

    async def receive():
        if not delivered:
            delivered.append(True)
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # no disconnect while the response goes out

    async def send(message):
        sent.append(message)

    run_isolated(lambda: app(scope, receive, send))
    return sent


def _get(path: str) -> tuple[dict, dict]:
    start = _exchange(path)[0]
    return start, {name.lower(): value for name, value in start["headers"]}


@pytest.mark.django_db(transaction=True)
def test_a_page_passes_every_middleware():
    start, headers = _get("/login/")
    assert start["status"] == 200
    assert headers[b"x-frame-options"] == b"DENY"  # XFrameOptionsMiddleware, the innermost
    assert b"csrftoken" in headers.get(b"set-cookie", b"")  # CsrfViewMiddleware
    assert headers[b"server-timing"].startswith(b"app;dur=")


def test_views_are_loaded_at_start_up_and_frozen_out_of_the_collectors_sight():
    # Full collections in a web process walk only what requests created, not the ~260k objects of the loaded
    # code (annotate.server.heap): pauses of 10-40 ms instead of 150-360 ms on the queue_load benchmark.
    assert {"annotate.sessions.apis", "evaluation.interfeedback.apis"} <= set(sys.modules)
    assert gc.get_freeze_count() > 50_000


@pytest.mark.django_db(transaction=True)
def test_a_request_crosses_between_the_event_loop_and_its_thread_seldom():
    # Every middleware above the lowest sync-only one runs in the request's thread, every one below it in the event
    # loop with two crossings each: the sync-only one sits at the bottom (settings.MIDDLEWARE), so a request
    # crosses 7 times (the signals, the stack, the view's middleware hooks, the view, closing), not 12.
    from unittest import mock

    from asgiref.sync import SyncToAsync

    calls = []
    original = SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        calls.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await original(self, *args, **kwargs)

    _get("/login/")  # loaded once
    with mock.patch.object(SyncToAsync, "__call__", counted):
        start, _ = _get("/login/")
    assert start["status"] == 200
    assert len(calls) <= 7, calls
