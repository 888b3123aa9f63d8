"""The Celery app. Model calls go to model queues (see settings.MODEL_QUEUE_PREFIX); the rest to "default"."""

import os

from celery import Celery
from celery.signals import (
    task_postrun,
    task_prerun,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotate.config.settings")

# Every worker runs with these: gossip and mingle (worker-to-worker chatter this project does not use) are the
# steps that fail on restart after a lost broker connection ("Error on restarting Gossip", kombu).
WORKER_OPTIONS = ("--without-gossip", "--without-mingle")

app = Celery("annotate")
# Celery's current_app in every thread (not only this one): the domain below the wiring sends tasks by name
# through it (annotate.queue_contract) and never imports this module.
app.set_default()
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["annotate.sessions", "annotate.queue", "annotate.imports", "annotate.modelconfigs",
                        "annotate.bench", "annotate.crowd", "annotate.prolific", "evaluation.interfeedback", "evaluation.exports"])


@worker_process_shutdown.connect  # prefork: each child process
@worker_shutdown.connect  # the threads pool (GPU workers) has no child processes
def _release_models(**_kwargs):
    # Free GPU memory and HTTP connections held by warm backends when a worker process ends.
    from models_runtime.registry import release_all

    release_all()


@worker_process_init.connect  # prefork: each child, once forked
@worker_ready.connect  # the threads pool runs its tasks in this process
def _freeze_startup_heap(**_kwargs):
    # Full garbage collections then skip the loaded code (see annotate.server.heap): shorter pauses mid-stream.
    from annotate.server.heap import freeze_startup_heap

    freeze_startup_heap()


@task_prerun.connect
@task_postrun.connect
def _database_connections_between_tasks(sender=None, **_kwargs):
    # A task is to a worker what a request is to a web process: Django's own check at its boundaries drops a
    # connection past DB_CONN_MAX_AGE or left broken, and arms the health check of a kept one (settings). Not in
    # eager tasks, which run inside their caller's transaction.
    if sender is not None and getattr(sender.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()
