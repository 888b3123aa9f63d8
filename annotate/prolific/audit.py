"""The audit trail of Prolific calls: one ProlificCall row per request made (who, when, what was sent, what came
back). Written as each answer comes (the services make no transaction around a call), so a call is on record
even when the work that asked for it fails afterwards."""

from __future__ import annotations

from typing import Any

from annotate.models import Batch, ProlificCall, User
from annotate.prolific.client import CallRecorder, ProlificClient

MAX_ERROR = 500


def call_recorder(*, batch: Batch | None, by: User | None) -> CallRecorder:
    def record(method: str, path: str, sent: Any, status: int | None, answer: Any, error: str) -> None:
        ProlificCall.objects.create(batch=batch, method=method, path=path[:300], sent=sent, status_code=status,
                                    answer=answer, error=error[:MAX_ERROR], by=by)
    return record


def client_for(*, batch: Batch | None, by: User | None) -> ProlificClient:
    """A client whose every call is recorded against the batch and the person (None: the scheduled sync)."""
    return ProlificClient.from_settings(on_call=call_recorder(batch=batch, by=by))
