"""ASGI entry point: Django's own ASGI handler for HTTP, Channels for WebSockets (Channels' session auth stack,
origin-checked, at most WEBSOCKETS_PER_USER per person, each socket's database calls in a thread of its own),
behind forwarded headers read from TRUSTED_PROXIES only (annotate.server.proxies)."""

import os

from django.core.asgi import get_asgi_application

# Python's default GIL switch interval (5 ms): a 1 ms interval set here once showed no gain on queue_load at 1, 200
# or 1,000 annotators (benchmarks/results/2026-11-26.md), so the process keeps the interpreter's default.

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotate.config.settings")
django_asgi_app = get_asgi_application()  # sets Django up before the imports below touch models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import path, re_path  # noqa: E402

from annotate.config.startup import load_before_serving  # noqa: E402
from annotate.server.proxies import ForwardedHeaders  # noqa: E402
from annotate.server.timing import ServerTimingMiddleware  # noqa: E402
from annotate.server.ws_limits import WebSocketsPerUser  # noqa: E402
from annotate.server.ws_threads import ThreadPerSocket  # noqa: E402
from annotate.sessions.consumers import SessionConsumer, no_route  # noqa: E402
from annotate.watch.consumers import DashboardConsumer  # noqa: E402

websocket_urlpatterns = [
    path("ws/sessions/<int:session_id>/", SessionConsumer.as_asgi()),
    path("ws/batches/<int:batch_id>/dashboard/", DashboardConsumer.as_asgi()),
    re_path(r"", no_route),  # last: any other path is refused with 4404 (URLRouter would raise instead)
]

application = ForwardedHeaders(ProtocolTypeRouter(
    {
        "http": ServerTimingMiddleware(django_asgi_app),
        "websocket": ThreadPerSocket(AllowedHostsOriginValidator(
            AuthMiddlewareStack(WebSocketsPerUser(URLRouter(websocket_urlpatterns))))),
    }
), settings.TRUSTED_PROXIES)

load_before_serving()
