"""What a web process loads before it serves, ASGI or WSGI alike."""

from __future__ import annotations


def load_before_serving() -> None:
    """Load now what the first request of each process used to load, so that it is frozen with the rest: every view
    and the URL reverse map (~70 ms of CPU), the Celery task registry and the broker's transport (~90 ms)."""
    from django.urls import get_resolver

    from annotate.config.celery import app as celery_app
    from annotate.server.heap import freeze_startup_heap

    get_resolver().reverse("api-next")
    celery_app.finalize()
    with celery_app.connection_for_write() as broker:
        broker.transport  # noqa: B018  (imports the transport; connects only when used)
    freeze_startup_heap()
