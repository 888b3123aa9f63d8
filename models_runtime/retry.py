"""The one retry layer for model calls: how often, how long apart and for how long in all a call is tried again.

``Backend.stream`` (models_runtime.base) applies a backend's ``RetryPolicy`` to TransientModelError raised before
the first chunk, for every backend; nothing above it (no Celery retry, no second HTTP-client loop) retries a
model error again. A server's ``Retry-After`` is honoured, never shortened: when it asks for more time than the
round's budget has left, the call gives up at once instead of sending a request it was told not to send.

tenacity is not installed in this project and the policy is a few lines, so it is written here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """Attempts of one model call, and the waits between them.

    - ``max_attempts``: requests per call, the first included (1: never retried).
    - ``base_delay`` / ``max_delay``: exponential backoff with full jitter, ``uniform(0, min(max, base * 2**n))``,
      used when the server says nothing about when to come back.
    - ``total_seconds``: the budget of one call, from its first attempt: no wait may end past it.
    - ``jitter``: after a ``Retry-After: s``, wait ``s * uniform(1, 1 + jitter)``, so the many callers the
      server told the same thing do not all come back in the same instant.
    """

    max_attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 30.0
    total_seconds: float = 60.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts}")
        for name in ("base_delay", "max_delay", "total_seconds", "jitter"):
            if getattr(self, name) < 0:
                raise ValueError(f"RetryPolicy.{name} must be >= 0, got {getattr(self, name)}")

    def wait_before(self, attempt: int, retry_after: float | None, rng: random.Random | None = None) -> float:
        """Seconds to wait before attempt number ``attempt`` (2 for the first retry)."""
        draw = (rng or random).uniform
        if retry_after is not None and retry_after > 0:
            return retry_after * draw(1.0, 1.0 + self.jitter)
        return draw(0.0, min(self.max_delay, self.base_delay * 2 ** (attempt - 2)))

    def next_wait(
        self, attempts_made: int, elapsed: float, retry_after: float | None, rng: random.Random | None = None,
        *, unreached: bool = False,
    ) -> float | GiveUp:
        """The wait before the next attempt, or GiveUp saying why there is none.

        ``attempts_made``: attempts so far; ``elapsed``: seconds since the first began; ``retry_after``: what the
        last failure's server asked for, if anything; ``unreached``: the last attempt never reached a server
        (connection refused): such attempts cost nothing, so only the budget limits them, not ``max_attempts``.
        """
        done = f"gave up after {attempts_made} attempt(s) in {elapsed:.1f} s"
        if attempts_made >= self.max_attempts and not unreached:
            return GiveUp(done)
        left = self.total_seconds - elapsed
        if left <= 0:
            return GiveUp(f"{done}: the {self.total_seconds:g} s retry budget is spent")
        if retry_after is not None and retry_after > left:
            return GiveUp(
                f"{done}: the server asked to wait {retry_after:g} s (Retry-After), more than the "
                f"{left:.1f} s left of the {self.total_seconds:g} s retry budget"
            )
        return min(self.wait_before(attempts_made + 1, retry_after, rng), left)


@dataclass(frozen=True)
class GiveUp:
    """No further attempt: ``reason`` says why, for the error message."""

    reason: str
