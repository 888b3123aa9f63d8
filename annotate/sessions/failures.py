"""Why a round failed, as the annotator is told. A few fixed messages, which the page shows in the annotator's
language by their kind (the snapshot is built by a worker, in no one's language), and the model's own errors,
shown as they came under a translated sentence."""

from __future__ import annotations

from annotate.health import UNAVAILABLE_MESSAGE

TIMED_OUT_MESSAGE = "The model took too long to answer."
WORKER_STOPPED_MESSAGE = "The model worker stopped before the answer was complete. Your text is saved; press Retry."
_KINDS = {TIMED_OUT_MESSAGE: "timed_out", WORKER_STOPPED_MESSAGE: "worker_stopped", UNAVAILABLE_MESSAGE: "unavailable"}


def failure_kind(error: str) -> str:
    """"" (no error), one of the fixed kinds, or "model" (the model's own error text)."""
    return _KINDS.get(error, "model") if error else ""
