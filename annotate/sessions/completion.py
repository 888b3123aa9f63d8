"""What a completed (or re-judged) session sets off beyond itself. Apps downstream register a listener (the
evaluation app counts outcomes); annotate calls the listeners without importing them, so imports keep pointing
one way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class SessionListener(Protocol):
    def __call__(self, session_id: int, *, in_worker: bool) -> None: ...


_listeners: list[SessionListener] = []


def on_session_completed(listener: SessionListener) -> SessionListener:
    """Register ``listener(session_id, in_worker=...)``: ``in_worker`` says the caller is already a Celery worker
    (it may do the work at once), else a web request after its commit (queue the work instead)."""
    if listener not in _listeners:
        _listeners.append(listener)
    return listener


def session_completed(session_id: int, *, in_worker: bool) -> None:
    for listener in _listeners:
        listener(session_id, in_worker=in_worker)


def listeners() -> tuple[Callable[..., None], ...]:
    return tuple(_listeners)
