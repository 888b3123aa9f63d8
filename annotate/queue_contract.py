"""The Celery task names and the one way to send them: the contract between the code that queues work and the
workers that run it.

Code queues a task by name instead of importing the task function, so a service never imports its own Celery
entry point (no import cycle), and annotate reaches evaluation's tasks without importing evaluation. The names
are the ones the tasks have always had: messages already queued survive an upgrade that moves code.
"""

from __future__ import annotations

from typing import Any

from celery import current_app

ROUND_GENERATE = "annotate.tasks.round_generate"
ROUNDS_REAP_STALLED = "annotate.tasks.rounds_reap_stalled"
ASSIGNMENTS_EXPIRE = "annotate.tasks.assignments_expire"
BATCH_IMPORT = "annotate.tasks.batch_import_job"
MODEL_CHECK = "annotate.tasks.model_config_check_job"
MODELS_PROBE = "annotate.tasks.models_probe"
MODEL_PROBE = "annotate.tasks.model_probe"
BENCH_LANE = "annotate.tasks.bench_lane"
PARTICIPATIONS_TIME_OUT = "annotate.tasks.participations_time_out"
PROLIFIC_STUDIES_SYNC = "annotate.tasks.prolific_studies_sync"

OUTCOME_RECORD = "evaluation.tasks.outcome_record"
OUTCOME_RECOMPUTE = "evaluation.tasks.outcome_recompute"
SESSIONS_EXPORT = "evaluation.tasks.sessions_export"
BUNDLE_EXPORT = "evaluation.tasks.bundle_export"
EXPORT_FILES_EXPIRE = "evaluation.tasks.export_files_expire"


def send_task(name: str, *, args: list[Any], **options: Any) -> None:
    """Queue task ``name`` (Celery's ``send_task``: options as ``apply_async``'s, e.g. queue, time limits).
    Raises what the broker client raises when the broker cannot be reached.

    Celery's current app is the project's in every thread (annotate.config.celery makes it the default when the
    annotate package loads), so this contract needs nothing from the wiring above it."""
    current_app.send_task(name, args=args, **options)
