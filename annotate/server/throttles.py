"""Per-user limits on starting long jobs (recounts, session exports, model checks, starting and resuming bench and
FIRE runs): DRF's own throttling, counted in the Redis cache so every web process shares the count.
``JOB_RATE_LIMIT`` ("10/min" by default; empty: off). Only writes count: reading a job's list is never limited."""

from __future__ import annotations

import math

from django.conf import settings
from rest_framework.exceptions import Throttled
from rest_framework.permissions import SAFE_METHODS
from rest_framework.throttling import UserRateThrottle


class JobCreationThrottle(UserRateThrottle):
    scope = "jobs"

    def get_rate(self) -> str | None:
        return settings.JOB_RATE_LIMIT or None  # read per request: the limit is a setting, not frozen at import

    def message(self, wait: float | None) -> str:
        again = f"try again in {math.ceil(wait)} s" if wait else "try again in a moment"
        return f"Too many jobs started: at most {self.get_rate()} per person; {again}."


def job_creation_wait(request) -> str | None:
    """For pages (not DRF views): None when the user may start a job now, else the message to show."""
    throttle = JobCreationThrottle()
    if throttle.allow_request(request, None):
        return None
    return throttle.message(throttle.wait())


class JobCreationThrottled:
    """Mixin for DRF views that start a job: 429 with Retry-After and a message saying the limit."""

    throttle_classes = [JobCreationThrottle]

    def get_throttles(self):
        return [] if self.request.method in SAFE_METHODS else super().get_throttles()

    def throttled(self, request, wait):
        raise Throttled(wait, detail=JobCreationThrottle().message(wait))
