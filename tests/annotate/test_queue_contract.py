"""The Celery task names are the queue contract: every name code sends is a task the workers know, under the name
it always had (messages queued before an upgrade that moves code must still find their task), and beat sends
only those names."""

from django.conf import settings

from annotate import queue_contract
from annotate.config.celery import app

# Upper-case strings are the contract; those ending in _QUEUE name queues, the others tasks.
NAMES = {value for name, value in vars(queue_contract).items()
         if name.isupper() and isinstance(value, str) and not name.endswith("_QUEUE")}


def test_every_contract_name_is_a_registered_task():
    app.loader.import_default_modules()
    app.autodiscover_tasks(["annotate.sessions", "annotate.queue", "annotate.imports", "annotate.modelconfigs",
                            "annotate.bench", "annotate.crowd", "annotate.prolific", "evaluation.interfeedback",
                            "evaluation.exports"], force=True)
    assert NAMES <= set(app.tasks), sorted(NAMES - set(app.tasks))


def test_the_names_are_the_ones_queued_messages_carry():
    assert {name.rsplit(".", 1)[0] for name in NAMES} == {"annotate.tasks", "evaluation.tasks"}


def test_beat_sends_contract_names_only():
    assert {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()} <= NAMES
