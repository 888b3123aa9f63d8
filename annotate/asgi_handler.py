"""Django's ASGI handler, with the middleware chain and the view run in one thread per request, taken from a pool.

Under ASGI Django builds an async middleware chain: each of its own middlewares (``MiddlewareMixin``) then runs
``process_request`` and ``process_response`` through ``sync_to_async``, whitenoise (sync only) hops back to the
event loop with ``async_to_sync``, and the view hops to a thread once more: about a dozen hand-overs between the
event loop and the request's thread per request. Each costs a thread wake-up and a wait for the GIL; measured on
the queue_load benchmark's web process, they were a third of its CPU time per request.

Every view and middleware of this project is synchronous, so the chain is built sync (as under WSGI) and entered
with one ``sync_to_async``, in the request's thread-sensitive context (the ORM's thread, as before). Streaming
responses still stream from the event loop (``ASGIHandler.send_response``), and WebSockets do not pass here.

Django gives each request a fresh thread (a new executor per ``ThreadSensitiveContext``), and asgiref starts a
second one to join it afterwards. ``Thread.start()`` blocks the event loop until the new thread has run, which
under load means waiting for the GIL while every connection of the process stalls. The request threads are
therefore kept and reused, as a WSGI server's are: each request still runs all its sync code (signals, middleware,
view, ``response.close()``) in one thread of its own while it lasts.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.http import FileResponse
from django.http.response import HttpResponseBase
from django.urls import set_script_prefix


class RequestThreads:
    """Single-thread executors for requests, reused. Used from the event loop's thread only (no lock needed)."""

    def __init__(self, keep_idle: int = 32):
        self.keep_idle = keep_idle
        self._idle: list[ThreadPoolExecutor] = []

    def acquire(self) -> ThreadPoolExecutor:
        # Last in, first out: the most recently used thread is the likeliest to be warm.
        return self._idle.pop() if self._idle else ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")

    def release(self, executor: ThreadPoolExecutor) -> None:
        if len(self._idle) < self.keep_idle:
            self._idle.append(executor)
        else:  # after a burst: let the extra thread end on its own, without joining it from the event loop
            executor.shutdown(wait=False)


class OneThreadASGIHandler(ASGIHandler):
    def __init__(self):
        super().__init__()
        self.request_threads = RequestThreads()

    async def __call__(self, scope, receive, send):
        executor = self.request_threads.acquire()
        try:
            # The outermost context decides the thread: Django's own ThreadSensitiveContext inside is a no-op.
            async with ThreadSensitiveContext(executor=executor):
                await super().__call__(scope, receive, send)
        except BaseException:
            executor.shutdown(wait=False)  # its thread may still be running the failed request's code
            raise
        # Django returns once the request's last sync call is done (a client that went away included).
        self.request_threads.release(executor)

    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)

    async def handle(self, scope, receive, send):
        """Django's ``handle`` with the request's sync work in one hop to its thread: ``request_started``, the
        request object, the middleware chain and view, and (for a response that is not streamed) ``close()``,
        which sends ``request_finished`` and gives the database connection back before the response goes out.
        Django makes three hops of it, plus two tasks to watch for a disconnect that cannot stop a sync view."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        try:
            response = await sync_to_async(self._respond, thread_sensitive=True)(scope, body_file)
            try:
                await self.send_response(response, send)
            finally:
                if response.streaming:  # closed once streamed (a file response holds its file open until then)
                    await sync_to_async(response.close, thread_sensitive=True)()
        finally:
            body_file.close()

    def _respond(self, scope, body_file) -> HttpResponseBase:
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
            response._handler_class = self.__class__
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size  # as Django's run_get_response: the server chunks
        if not response.streaming:
            response.close()
        return response
