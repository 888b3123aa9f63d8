"""A batch's live study dashboard: what is done, under way and left (per model and category), the pace and an ETA,
whether the batch's annotators can finish it, who is working now, skips, leak warnings, failed model calls and the
depth of each model queue. One snapshot (a plain dict, the same for the page, the API and the WebSocket), built
from a handful of grouped queries."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, TypedDict

from celery import current_app
from django.db.models import Count, F, Q, QuerySet, Sum, Value
from django.db.models.functions import Least, TruncHour
from django.utils import timezone

from annotate.models import (
    Assignment,
    Batch,
    LeakWarning,
    ModelConfig,
    Participation,
    Round,
    RoundFailure,
    WorkItem,
)
from annotate.queue.capacity import batch_capacity
from annotate.queue.items import CONVERSATION_KINDS
from annotate.watch.pace import completions_per_working_hour

HOURS_SHOWN = 24  # sessions per hour and the progress plot cover the last day


class Slots(TypedDict):
    """Sessions (or ratings, K per item) of a model, a category or the batch."""

    name: str
    needed: int
    done: int
    in_progress: int
    left: int


class DashboardBatch(TypedDict):
    id: int
    name: str
    kind: str
    overlap: int


class HourCount(TypedDict):
    hour: str  # ISO 8601, the start of the hour
    completed: int


class SkipCount(TypedDict):
    reason: str
    count: int


class FailureCounts(TypedDict):
    last_hour: int
    total: int
    failing_now: int


class ModelFailures(FailureCounts):
    model: str
    latest: str  # the latest failure's full text (researchers only), at most 500 characters


class QueueDepth(TypedDict):
    queue: str
    depth: int | None  # None: the broker could not be asked


class UnavailableModel(TypedDict):
    model: str
    since: str
    reason: str


class Dashboard(TypedDict):
    """The snapshot the page, the API and the WebSocket share (batch_dashboard)."""

    batch: DashboardBatch
    generated_at: str
    totals: dict[str, int]
    by_model: list[Slots]
    by_category: list[Slots]
    per_hour: list[HourCount]
    cumulative: list[int]
    pace_per_hour: float
    pace_hours_worked: float
    eta_seconds: int | None
    capacity: dict[str, int | str | bool] | None
    active_annotators: int
    skips: list[SkipCount]
    skips_total: int
    leak_warnings: int
    model_errors: list[ModelFailures]
    queues: list[QueueDepth]
    unavailable_models: list[UnavailableModel]
    participants: dict[str, int]


# A grouped row of work items: ``needed``, ``done`` and ``active`` slots (NULL over no rows) and the row's name.
SlotRow = Mapping[str, Any]


def _progress(rows: Iterable[SlotRow], key: str, order: list[str] | None = None) -> list[Slots]:
    """Grouped work-item rows -> slots (sessions or ratings K per item) needed, done, under way, left; in ``order``
    (names not in it after, by name), else by name."""
    out: list[Slots] = []
    for row in rows:
        needed, done, active = row["needed"] or 0, row["done"] or 0, row["active"] or 0
        active = min(active, needed - done)
        out.append({"name": row[key] or "—", "needed": needed, "done": done, "in_progress": active,
                    "left": needed - done - active})
    rank = {name: i for i, name in enumerate(order or [])}
    return sorted(out, key=lambda r: (rank.get(r["name"], len(rank)), r["name"]))


def _models_named(models: object, extra: object) -> str:
    """The models a preference item compares, as one name: its record's ``models`` list (kept in the metadata, or
    among the extra fields by an older import) in name order, whatever order the responses came in; "" when the
    record names none."""
    named = models if models is not None else extra
    return " · ".join(sorted(str(name) for name in named)) if isinstance(named, list) else ""


def _conversation_progress(batch: Batch, items: QuerySet[WorkItem],
                           slots: dict[str, Any]) -> tuple[list[Slots], list[Slots]]:
    """A FIRE or preference batch's rows: by model, the set of models an item compares (preference items whose
    records name them; none for FIRE, whose items compare no models), and by category, the records' source. Each
    item is in one row of each table, so the rows add up to the batch's totals. Two grouped queries."""
    by_model: list[Slots] = []
    if batch.kind == Batch.Kind.PREFERENCE:
        merged: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(slots, 0))
        rows: Iterable[SlotRow] = items.values("conversation__metadata__models",
                                               "conversation__metadata__extra__models").annotate(**slots).order_by()
        for row in rows:
            name = _models_named(row["conversation__metadata__models"], row["conversation__metadata__extra__models"])
            for key in slots:
                merged[name][key] += row[key] or 0
        by_model = _progress([{**counts, "name": name} for name, counts in merged.items()], "name")
    by_category = _progress(items.values(name=F("conversation__source")).annotate(**slots).order_by(), "name",
                            batch.category_order)
    return by_model, by_category


def _totals(parts: list[Slots]) -> dict[str, int]:
    return {key: sum(p[key] for p in parts) for key in ("needed", "done", "in_progress", "left")}


def _queue_depths(models: list[ModelConfig]) -> list[QueueDepth]:
    """Messages waiting in each model queue, asked of the broker through Celery's connection (any broker URL the
    workers use); None when the broker cannot be asked."""
    names = sorted({m.queue_name for m in models})
    depths: list[int | None] = []
    try:
        with current_app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=1)
            channel = connection.default_channel
            for name in names:
                try:
                    depths.append(channel.queue_declare(queue=name, passive=True).message_count)
                except connection.channel_errors:  # never declared (no message was ever sent to it): nothing waits
                    depths.append(0)
                    channel = connection.default_channel
    except Exception:  # noqa: BLE001  (the dashboard shows "?" rather than failing)
        depths = [None] * len(names)
    return [{"queue": name, "depth": depth} for name, depth in zip(names, depths, strict=True)]


def batch_dashboard(batch: Batch, *, now: datetime | None = None) -> Dashboard:
    now = now or timezone.now()
    overlap = batch.overlap
    slots = {"needed": Count("id") * overlap, "done": Sum(Least(F("completed_count"), Value(overlap))),
             "active": Sum("active_count")}
    items = WorkItem.objects.filter(batch=batch, is_check=False)  # attention checks are outside the progress
    if batch.kind in CONVERSATION_KINDS:
        by_model, by_category = _conversation_progress(batch, items, slots)
    else:
        per_model = items.filter(model_config__isnull=False).values(
            display=F("model_config__display_name"), slug=F("model_config__name")).annotate(**slots)
        by_model = _progress([{**row, "name": row["display"] or row["slug"]} for row in per_model], "name")
        by_category = _progress(items.filter(task__isnull=False).values(name=F("task__category")).annotate(**slots),
                                "name", batch.category_order)
    totals = _totals(_progress([{**items.aggregate(**slots), "name": ""}], "name"))

    assignments = Assignment.objects.filter(work_item__batch=batch)
    since = now - timedelta(hours=HOURS_SHOWN)
    hourly = dict(assignments.filter(status=Assignment.Status.COMPLETED, finished_at__gte=since)
                  .annotate(hour=TruncHour("finished_at")).values_list("hour").annotate(n=Count("id")))
    first_hour = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=HOURS_SHOWN - 1)
    per_hour: list[HourCount] = [{"hour": (first_hour + timedelta(hours=h)).isoformat(),
                 "completed": hourly.get(first_hour + timedelta(hours=h), 0)} for h in range(HOURS_SHOWN)]
    pace = completions_per_working_hour(assignments, now)
    capacity = batch_capacity(batch)
    # No ETA for work nobody can be served: none while the batch's annotators cannot finish it.
    can_finish = capacity is None or not capacity.short
    eta_seconds = round(totals["left"] / pace.per_hour * 3600) if pace.per_hour and can_finish else None
    before = assignments.filter(status=Assignment.Status.COMPLETED, finished_at__lt=since).count()
    cumulative: list[int] = []
    running = before
    for bucket in per_hour:
        running += bucket["completed"]
        cumulative.append(running)

    skips = list(assignments.filter(status=Assignment.Status.SKIPPED).values("skip_reason")
                 .annotate(count=Count("id")).order_by("-count", "skip_reason"))
    active_now = assignments.filter(status=Assignment.Status.ACTIVE, lease_expires_at__gte=now).values(
        "annotator").distinct().count()
    models = list(batch.models_to_evaluate.order_by("name"))
    return {
        "batch": {"id": batch.pk, "name": batch.name, "kind": batch.kind, "overlap": overlap},
        "generated_at": now.isoformat(),
        "totals": totals,
        "by_model": by_model,
        "by_category": by_category,
        "per_hour": per_hour,
        "cumulative": cumulative,
        "pace_per_hour": round(pace.per_hour, 2),
        "pace_hours_worked": round(pace.hours_worked, 2),  # the time work happened in the last PACE_HOURS
        "eta_seconds": eta_seconds,
        "capacity": capacity.as_dict() if capacity is not None else None,
        "active_annotators": active_now,
        "skips": [{"reason": row["skip_reason"], "count": row["count"]} for row in skips],
        "skips_total": sum(row["count"] for row in skips),
        "leak_warnings": LeakWarning.objects.filter(session__batch=batch).count(),
        "model_errors": _failed_model_calls(batch, now),
        "queues": _queue_depths(models),
        # The circuit breaker (annotate.health): these models' rounds fail at once until a probe answers.
        "unavailable_models": [{"model": m.label, "since": m.unavailable_since.isoformat(),
                                "reason": m.unavailable_reason} for m in models if m.unavailable_since],
        "participants": _participants(batch),
    }


PARTICIPANT_ENDS = tuple(Participation.End.values)


def _participants(batch: Batch) -> dict[str, int]:
    """Invited participants: joined, still working, finished, and each way a participation ends before its code
    (returned and timed out among them: their items were freed at once). One grouped query."""
    counts = Participation.objects.filter(batch=batch).aggregate(
        joined=Count("id"), finished=Count("id", filter=Q(finished_at__isnull=False)),
        working=Count("id", filter=Q(finished_at__isnull=True, ended_at__isnull=True)),
        **{end: Count("id", filter=Q(end_reason=end)) for end in PARTICIPANT_ENDS})
    return counts


def _failed_model_calls(batch: Batch, now: datetime) -> list[ModelFailures]:
    """Per model: failed model calls in the last hour and since the batch began (kept when a round is retried),
    rounds failed right now (waiting for Retry) and the latest of their errors in full."""
    counts: defaultdict[str, FailureCounts] = defaultdict(lambda: {"last_hour": 0, "total": 0, "failing_now": 0})
    hour_ago = now - timedelta(hours=1)
    for display, slug, last_hour, total in (
            RoundFailure.objects.filter(batch=batch).values_list("model_config__display_name", "model_config__name")
            .annotate(last_hour=Count("id", filter=Q(failed_at__gte=hour_ago)), total=Count("id"))):
        row = counts[display or slug]
        row["last_hour"] += last_hour
        row["total"] += total
    latest: dict[str, str] = {}
    failed_now = Round.objects.filter(session__batch=batch, generation_status=Round.Generation.FAILED)
    for config_id, display, slug, n in (failed_now.values_list(
            "session__model_config", "session__model_config__display_name", "session__model_config__name")
            .annotate(n=Count("id"))):
        counts[display or slug]["failing_now"] += n
        # The failure's full text (servers, exceptions) for researchers; annotators were told a plain sentence.
        latest[display or slug] = (failed_now.filter(session__model_config=config_id).order_by("-finished_at", "-id")
                                   .values_list("error", flat=True).first() or "")[:500]
    return [{"model": name, **row, "latest": latest.get(name, "")} for name, row in sorted(counts.items())]
