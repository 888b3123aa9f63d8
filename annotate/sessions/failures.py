"""Why a round failed: the full message kept on the round for researchers, and what annotators are told.

A round's ``error`` starts with one of the sentences below, and for model errors goes on with the detail in
parentheses (the server's URL, the exception, how many attempts): researchers read it on the session's research
page and the study dashboard. Annotators and crowd participants never see that detail, which names the lab's
servers: their snapshot carries the failure's kind and its plain sentence only, and the page shows that sentence in
the annotator's language by its kind (the snapshot is built by a worker, in no one's language).
"""

from __future__ import annotations

from django.utils import timezone

from annotate.health import UNAVAILABLE_MESSAGE
from annotate.models import Round, RoundFailure

TIMED_OUT_MESSAGE = "The model took too long to answer."
WORKER_STOPPED_MESSAGE = "The model worker stopped before the answer was complete. Your text is saved; press Retry."
QUEUE_UNREACHABLE_MESSAGE = "The model queue could not be reached. Your text is saved; press Retry in a moment."
BROKE_OFF_MESSAGE = "The model's answer broke off before it was complete; press Retry."
EMPTY_MESSAGE = "The model gave an empty answer; press Retry."
NO_ANSWER_MESSAGE = "The model did not answer; press Retry in a moment."
MODEL_FAILED_MESSAGE = "The model call failed; press Retry."

# Kind -> the sentence annotators read. Order matters for prefixes: none of these starts another.
PLAIN_MESSAGES = {
    "timed_out": TIMED_OUT_MESSAGE,
    "worker_stopped": WORKER_STOPPED_MESSAGE,
    "queue_unreachable": QUEUE_UNREACHABLE_MESSAGE,
    "unavailable": UNAVAILABLE_MESSAGE,
    "broke_off": BROKE_OFF_MESSAGE,
    "empty": EMPTY_MESSAGE,
    "no_answer": NO_ANSWER_MESSAGE,
    "model": MODEL_FAILED_MESSAGE,
}


def with_detail(plain: str, detail: object) -> str:
    """The round's error: the sentence annotators are shown, then the detail for researchers."""
    return f"{plain} ({detail})"


def failure_kind(error: str) -> str:
    """"" (no error), or the kind of failure: one of PLAIN_MESSAGES' keys ("model" for any other error)."""
    if not error:
        return ""
    for kind, plain in PLAIN_MESSAGES.items():
        if error.startswith(plain):
            return kind
    return "model"


def failure_plain_message(error: str) -> str:
    """What annotators are told about a round that failed with ``error``: its sentence, never the detail."""
    kind = failure_kind(error)
    return PLAIN_MESSAGES[kind] if kind else ""


def round_failure_record(*, round_id: int, cause: str) -> None:
    """Keep a record of a round that failed: the dashboard counts failed model calls over time from these, and a
    Retry, which clears the round's error, leaves them."""
    row = Round.objects.filter(pk=round_id).values_list("session__batch_id", "session__model_config_id").first()
    if row is not None:
        RoundFailure.objects.create(round_id=round_id, batch_id=row[0], model_config_id=row[1], cause=cause,
                                    failed_at=timezone.now())
