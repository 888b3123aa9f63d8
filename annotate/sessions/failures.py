"""Why a round failed, as the annotator is told. A few fixed messages, which the page shows in the annotator's
language by their kind (the snapshot is built by a worker, in no one's language), and the model's own errors,
shown as they came under a translated sentence."""

from __future__ import annotations

from django.utils import timezone

from annotate.health import UNAVAILABLE_MESSAGE
from annotate.models import Round, RoundFailure

TIMED_OUT_MESSAGE = "The model took too long to answer."
WORKER_STOPPED_MESSAGE = "The model worker stopped before the answer was complete. Your text is saved; press Retry."
_KINDS = {TIMED_OUT_MESSAGE: "timed_out", WORKER_STOPPED_MESSAGE: "worker_stopped", UNAVAILABLE_MESSAGE: "unavailable"}


def failure_kind(error: str) -> str:
    """"" (no error), one of the fixed kinds, or "model" (the model's own error text)."""
    return _KINDS.get(error, "model") if error else ""


def round_failure_record(*, round_id: int, cause: str) -> None:
    """Keep a record of a round that failed: the dashboard counts failed model calls over time from these, and a
    Retry, which clears the round's error, leaves them."""
    row = Round.objects.filter(pk=round_id).values_list("session__batch_id", "session__model_config_id").first()
    if row is not None:
        RoundFailure.objects.create(round_id=round_id, batch_id=row[0], model_config_id=row[1], cause=cause,
                                    failed_at=timezone.now())
