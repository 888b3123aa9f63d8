"""The project's ASGI app for HTTP: Django's whole middleware chain and the view run in one thread per request."""

import asyncio
import gc
import sys

import pytest
from asgiref.sync import iscoroutinefunction

from annotate.asgi import application, django_asgi_app
from tests.annotate.helpers import run_isolated


def _get(path: str) -> tuple[dict, dict]:
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

    run_isolated(lambda: application(scope, receive, send))
    return sent[0], {name.lower(): value for name, value in sent[0]["headers"]}


def test_the_middleware_chain_is_synchronous_and_entered_once():
    assert not iscoroutinefunction(django_asgi_app._middleware_chain)


@pytest.mark.django_db(transaction=True)
def test_a_page_passes_every_middleware():
    start, headers = _get("/login/")
    assert start["status"] == 200
    assert headers[b"x-frame-options"] == b"DENY"  # XFrameOptionsMiddleware, the innermost
    assert b"csrftoken" in headers.get(b"set-cookie", b"")  # CsrfViewMiddleware
    assert headers[b"server-timing"].startswith(b"app;dur=")


def test_views_are_loaded_at_start_up_and_frozen_out_of_the_collectors_sight():
    # Full collections in a web process walk only what requests created, not the ~260k objects of the loaded
    # code (annotate.heap): pauses of 10-40 ms instead of 150-360 ms on the queue_load benchmark.
    assert {"annotate.apis", "evaluation.apis"} <= set(sys.modules)
    assert gc.get_freeze_count() > 50_000
