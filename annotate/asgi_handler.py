"""Django's ASGI handler, with the middleware chain and the view run in one thread per request.

Under ASGI Django builds an async middleware chain: each of its own middlewares (``MiddlewareMixin``) then runs
``process_request`` and ``process_response`` through ``sync_to_async``, whitenoise (sync only) hops back to the
event loop with ``async_to_sync``, and the view hops to a thread once more: about a dozen hand-overs between the
event loop and the request's thread per request. Each costs a thread wake-up and a wait for the GIL; measured on
the queue_load benchmark's web process, they were a third of its CPU time per request.

Every view and middleware of this project is synchronous, so the chain is built sync (as under WSGI) and entered
with one ``sync_to_async``, in the request's thread-sensitive context (the ORM's thread, as before). Streaming
responses still stream from the event loop (``ASGIHandler.send_response``), and WebSockets do not pass here.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler


class OneThreadASGIHandler(ASGIHandler):
    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)

    async def get_response_async(self, request):
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)
