"""WSGI entry point, for the HTTP side of a split deployment: gunicorn's processes serve the pages and the API, each
request in one thread from start to end, while the ASGI processes (annotate.config.asgi) keep the WebSockets. A
proxy in front sends /ws/ to the one and the rest to the other (docs/operations/deployment.md#split-http-and-websockets).
Same wrappers as under ASGI: forwarded headers read from TRUSTED_PROXIES only, and Server-Timing."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotate.config.settings")
django_wsgi_app = get_wsgi_application()  # sets Django up before the imports below touch settings

from django.conf import settings  # noqa: E402

from annotate.config.startup import load_before_serving  # noqa: E402
from annotate.server.proxies import WsgiForwardedHeaders  # noqa: E402
from annotate.server.timing import WsgiServerTiming  # noqa: E402

application = WsgiForwardedHeaders(WsgiServerTiming(django_wsgi_app, detail=settings.SERVER_TIMING_DETAIL),
                                   settings.TRUSTED_PROXIES)

load_before_serving()
