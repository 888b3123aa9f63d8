"""The annotation app. Loading it loads the project's Celery app (annotate.config.celery), so tasks bind to it in
every process; `celery -A annotate` finds it here as ``app``, the first name Celery looks for in a package."""

from annotate.config.celery import app

__all__ = ["app"]
