"""The pace of a batch: completions per hour of the time work actually happened (an honest dashboard).

"Completed in the last 3 hours ÷ 3" says 8 per hour for 25 sessions done in the last 15 minutes. Here the hours are
those in which someone held an item (the union of the assignments' spans, from reservation to completion, skip,
expiry, or now), within the last PACE_HOURS.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q, QuerySet

from annotate.models import Assignment

PACE_HOURS = 3  # the pace (and the ETA) look at the last hours


@dataclass(frozen=True)
class Pace:
    completed: int  # completions in the window
    hours_worked: float  # hours of the window in which someone held an item

    @property
    def per_hour(self) -> float:
        return self.completed / self.hours_worked if self.hours_worked else 0.0


def completions_per_working_hour(assignments: QuerySet[Assignment], now: datetime) -> Pace:
    start = now - timedelta(hours=PACE_HOURS)
    completed = assignments.filter(status=Assignment.Status.COMPLETED, finished_at__gte=start).count()
    if not completed:
        return Pace(0, 0.0)
    spans = (assignments.filter(created_at__lt=now)
             .filter(Q(finished_at__gte=start) | Q(finished_at__isnull=True, lease_expires_at__gte=start))
             .order_by("created_at").values_list("created_at", "finished_at", "lease_expires_at"))
    worked, covered_until = 0.0, start
    for began, finished, lease_end in spans.iterator(chunk_size=5000):
        ended = min(finished or min(lease_end, now), now)
        began = max(began, covered_until)
        if ended > began:
            worked += (ended - began).total_seconds()
            covered_until = ended
    return Pace(completed, worked / 3600)
