"""The project's ASGI app for HTTP: Django's whole middleware chain and the view run in one thread per request."""

import asyncio
import gc
import sys
import threading

import pytest
from asgiref.sync import iscoroutinefunction

from annotate.asgi import application, django_asgi_app
from annotate.asgi_handler import RequestThreads
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


@pytest.mark.django_db(transaction=True)
def test_requests_reuse_their_threads_and_run_all_their_sync_code_in_one():
    # Starting a thread blocks the event loop until it runs: the handler keeps request threads for reuse.
    from django.core.signals import request_finished, request_started

    seen = []

    def note(signal):
        return lambda **kwargs: seen.append((signal, threading.current_thread().name))

    started, finished = note("started"), note("finished")
    request_started.connect(started)
    request_finished.connect(finished)
    try:
        _get("/login/")
        _get("/login/")
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    assert [signal for signal, _ in seen] == ["started", "finished", "started", "finished"]
    assert len({thread for _, thread in seen}) == 1
    assert seen[0][1].startswith("request")  # one of the handler's threads, not the event loop's


def test_request_threads_are_reused_last_in_first_out_up_to_the_idle_limit():
    threads = RequestThreads(keep_idle=1)
    first, second = threads.acquire(), threads.acquire()
    assert first is not second  # two requests at once: two threads
    threads.release(first)
    threads.release(second)  # over the limit: shut down, not kept
    assert threads.acquire() is first
    assert second._shutdown


@pytest.mark.django_db(transaction=True)
@pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume")  # Django's, for any file under ASGI
def test_a_streamed_response_is_closed_once_sent(monkeypatch):
    # A plain response is closed in the request's one hop, before it goes out; a streamed one (a file) only once
    # all of it is sent, as Django does.
    import io

    from django.core.signals import request_finished
    from django.http import FileResponse

    events = []

    class File(io.BytesIO):
        def close(self):
            events.append("file closed")
            super().close()

    def streamed(request):
        return FileResponse(File(b"x" * 100_000), content_type="application/octet-stream")

    monkeypatch.setattr(django_asgi_app, "get_response", streamed)
    finished = lambda **kwargs: events.append("request_finished")  # noqa: E731
    request_finished.connect(finished)
    try:
        start, *body = _exchange("/anything", app=django_asgi_app)
    finally:
        request_finished.disconnect(finished)
    assert start["status"] == 200
    assert b"".join(message.get("body", b"") for message in body) == b"x" * 100_000
    assert events == ["file closed", "request_finished"]
