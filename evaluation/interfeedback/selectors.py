"""Reads for researchers: access checks, outcome counts for metrics.py, sessions for the browser and exports.

Reports read the counter rows (a few rows per model x category); a filter the counters cannot serve (a date
range) is one indexed GROUP BY over CountedSession, never a scan of rounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from django.db.models import Count, Exists, F, IntegerField, Model, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from annotate.errors import ApplicationError, NotFound
from annotate.models import Batch, Job, ModelConfig, Session, User
from annotate.people import access
from annotate.people.access import researcher_batches
from annotate.sessions.selectors import sessions_with_rounds
from evaluation.exports.filters import NO_FILTERS, ReportFilters
from evaluation.interfeedback.metrics import (
    ROUNDS,
    CountsKey,
    OutcomeCounts,
    accuracy_table,
    correction_rate_table,
)
from evaluation.models import NEVER, AnnotatorOutcomeCounter, BatchAggregate, CountedSession, OutcomeCounter
from evaluation.table import Table

K = TypeVar("K")
M = TypeVar("M", bound=Model)

# --- access -----------------------------------------------------------------------------------------


def batches_for_researcher(user: User) -> QuerySet[Batch]:
    counted = (
        OutcomeCounter.objects.filter(batch_id=OuterRef("pk"))
        .values("batch_id")
        .annotate(total=Sum("count"))
        .values("total")
    )
    return researcher_batches(user).annotate(
        sessions_counted=Coalesce(Subquery(counted, output_field=IntegerField()), 0)
    ).order_by("-created_at")


def batch_for_researcher(user: User, batch_id: int) -> Batch:
    """The batch if the user may read it (annotate.people.access), with its aggregate row. Others get an error."""
    return access.batch_for_researcher(user, batch_id, Batch.objects.select_related("aggregate"))


def batch_by_name(name: str) -> Batch:
    batch = Batch.objects.select_related("aggregate").filter(name=name).first()
    if batch is None:
        raise NotFound(f"No batch named {name!r}.")
    return batch


def job_for_batch(batch: Batch, job_id: int) -> Job:
    job = Job.objects.filter(pk=job_id, batch=batch).first()
    if job is None:
        raise NotFound(f"Job {job_id} does not exist in batch {batch.name!r}.")
    return job


def aggregate_of(batch: Batch) -> BatchAggregate | None:
    try:
        return batch.aggregate
    except BatchAggregate.DoesNotExist:
        return None


# --- outcome counts ---------------------------------------------------------------------------------


def _annotator_id(filters: ReportFilters) -> int | None:
    if not filters.annotator:
        return None
    annotator_id = User.objects.filter(pseudonym=filters.annotator).values_list("id", flat=True).first()
    if annotator_id is None:
        raise ApplicationError(f"No annotator with pseudonym {filters.annotator!r}.", code="bad_filter")
    return annotator_id


class _Unresolved:
    """No annotator id given: it is read from the filters' pseudonym."""


_UNRESOLVED = _Unresolved()
AnnotatorId = int | None | _Unresolved
# Counted sessions, or the counters per annotator or per batch: the same counts from three models' rows.
CountRows = QuerySet[Any]


def _rows(
    batch: Batch, filters: ReportFilters, *, per_annotator: bool = False, annotator_id: AnnotatorId = _UNRESOLVED
) -> tuple[CountRows, Count | Sum]:
    """The cheapest rows that answer these filters, and how to count them."""
    if isinstance(annotator_id, _Unresolved):
        annotator_id = _annotator_id(filters)
    rows: CountRows
    total: Count | Sum
    if filters.by_date:
        start, end = filters.completed_range()
        rows, total = CountedSession.objects.filter(batch=batch), Count("pk")
        if start:
            rows = rows.filter(completed_at__gte=start)
        if end:
            rows = rows.filter(completed_at__lt=end)
        if per_annotator:
            rows = rows.filter(annotator__isnull=False)
    elif per_annotator or annotator_id is not None:
        rows, total = AnnotatorOutcomeCounter.objects.filter(batch=batch, count__gt=0), Sum("count")
    else:  # no annotator asked for (annotator_id is None): the counters have no annotator field
        rows, total = cast(CountRows, OutcomeCounter.objects.filter(batch=batch, count__gt=0)), Sum("count")
    if annotator_id is not None:
        rows = rows.filter(annotator_id=annotator_id)
    if filters.model:
        rows = rows.filter(model_config__name=filters.model)
    if filters.category:
        rows = rows.filter(category=filters.category)
    return rows, total


def _tally(items: Iterable[tuple[K, int, int]]) -> dict[K, OutcomeCounts]:
    """(key, corrected_round, n) rows -> {key: OutcomeCounts}, summed in plain ints (28k rows: ~10 ms)."""
    cells: dict[K, list[int]] = {}
    for key, corrected_round, n in items:
        cell = cells.setdefault(key, [0, 0, 0, 0, 0])
        cell[0] += n
        # Rounds past 3 (a batch with more feedback rounds) are outside the paper's tables: "never within 3".
        if corrected_round != NEVER and corrected_round in ROUNDS:
            cell[1 + corrected_round] += n
    return {key: OutcomeCounts(cell[0], (cell[1], cell[2], cell[3], cell[4])) for key, cell in cells.items()}


def _model_names(ids: Iterable[int]) -> dict[int, str]:
    return dict(ModelConfig.objects.filter(pk__in=set(ids)).values_list("pk", "name"))


def _pseudonyms(ids: Iterable[int]) -> dict[int, str]:
    return dict(User.objects.filter(pk__in=set(ids)).values_list("pk", "pseudonym"))


# Grouping by ids and naming them afterwards keeps the GROUP BY a hash aggregate over narrow integer keys
# (on 145k rows: 0.1 s instead of 0.4 s with the names joined in).


def outcome_counts(
    batch: Batch, filters: ReportFilters = NO_FILTERS, annotator_id: AnnotatorId = _UNRESOLVED
) -> dict[CountsKey, OutcomeCounts]:
    """(model name, category) -> OutcomeCounts. Two queries (the counts, the model names)."""
    rows, total = _rows(batch, filters, annotator_id=annotator_id)
    grouped = list(rows.values_list("model_config_id", "category", "corrected_round").annotate(n=total).order_by())
    names = _model_names(model_id for model_id, *_ in grouped)
    return _tally(((names[model_id], category), r, n) for model_id, category, r, n in grouped)


@dataclass(frozen=True)
class AnnotatorRow:
    pseudonym: str
    counts: OutcomeCounts


def _ordered(by_annotator: dict[str, OutcomeCounts]) -> list[AnnotatorRow]:
    ordered = sorted(by_annotator.items(), key=lambda item: (-item[1].sessions, item[0]))
    return [AnnotatorRow(pseudonym, counts) for pseudonym, counts in ordered]


def annotator_breakdown(
    batch: Batch, filters: ReportFilters = NO_FILTERS, annotator_id: AnnotatorId = _UNRESOLVED
) -> list[AnnotatorRow]:
    """Per annotator (pseudonyms only), pooled over the filtered models and categories. Two queries."""
    rows, total = _rows(batch, filters, per_annotator=True, annotator_id=annotator_id)
    grouped = list(rows.values_list("annotator_id", "corrected_round").annotate(n=total).order_by())
    pseudonyms = _pseudonyms(annotator_id for annotator_id, *_ in grouped)
    return _ordered(_tally((pseudonyms[annotator_id], r, n) for annotator_id, r, n in grouped))


def filter_options(batch: Batch) -> dict[str, list[Any]]:
    """Models (slug, display name; by display name) and categories that have counted sessions, for the filter form;
    categories in the batch's order, as the tables. One query."""
    rows = (
        OutcomeCounter.objects.filter(batch=batch, count__gt=0)
        .values_list("model_config__name", "model_config__display_name", "category")
        .distinct()
        .order_by()
    )
    models: dict[str, str] = {}
    categories: set[str] = set()
    for model, display_name, category in rows:
        models[model] = display_name or model
        categories.add(category)
    return {"models": sorted(models.items(), key=lambda item: (item[1].casefold(), item[0])),
            "categories": categories_in_batch_order(batch, categories)}


@dataclass
class Report:
    batch: Batch
    filters: ReportFilters
    counts: dict[CountsKey, OutcomeCounts]
    accuracy: Table
    correction: Table
    annotators: list[AnnotatorRow] = field(default_factory=list)

    @property
    def sessions(self) -> int:
        return sum(counts.sessions for counts in self.counts.values())


def categories_in_batch_order(batch: Batch, categories: set[str]) -> list[str]:
    """The batch's category order (Batch.category_order), then any category it does not list, alphabetically."""
    ordered = [c for c in dict.fromkeys(batch.category_order or []) if c in categories]
    return ordered + sorted(categories - set(ordered))


def layout(batch: Batch, counts: dict[CountsKey, OutcomeCounts]) -> dict[str, Any]:
    """Rows and columns of the tables and figures: models in alphabetical order of their names, named by their
    display names (``labels``); categories in the batch's category order, any it does not list after them in
    alphabetical order. One query (the labels)."""
    models = sorted({m for m, _ in counts})
    return {"models": models, "categories": categories_in_batch_order(batch, {c for _, c in counts}),
            "labels": model_labels(models)}


def report_tables(batch: Batch, counts: dict[CountsKey, OutcomeCounts],
                  filters: ReportFilters) -> tuple[Table, Table]:
    """Table 3 and Table 4, with a note naming the filters when the tables cover a subset."""
    rows_and_columns = layout(batch, counts)
    accuracy = accuracy_table(counts, **rows_and_columns)
    correction = correction_rate_table(counts, **rows_and_columns)
    if filters.describe():
        accuracy.notes.append(filters.describe())
        correction.notes.append(filters.describe())
    return accuracy, correction


def batch_report(batch: Batch, filters: ReportFilters = NO_FILTERS, *, breakdown: bool = True) -> Report:
    # Two narrow GROUP BYs (few groups each) beat one by model x category x annotator: on a date range of
    # 145k sessions, 2 x 70 ms against 200 ms plus 28k rows to carry into Python.
    annotator_id = _annotator_id(filters)
    counts = outcome_counts(batch, filters, annotator_id)
    annotators = annotator_breakdown(batch, filters, annotator_id) if breakdown else []
    accuracy, correction = report_tables(batch, counts, filters)
    return Report(batch, filters, counts, accuracy, correction, annotators)


# --- sessions ---------------------------------------------------------------------------------------


def _filtered(rows: QuerySet[M], filters: ReportFilters, *, category_field: str) -> QuerySet[M]:
    """The report filters shared by counted sessions and sessions (date range, model, category, annotator)."""
    start, end = filters.completed_range()
    if start:
        rows = rows.filter(completed_at__gte=start)
    if end:
        rows = rows.filter(completed_at__lt=end)
    if filters.model:
        rows = rows.filter(model_config__name=filters.model)
    if filters.category:
        rows = rows.filter(**{category_field: filters.category})
    if filters.annotator:
        rows = rows.filter(annotator__pseudonym=filters.annotator)
    return rows


def counted_sessions(batch: Batch, filters: ReportFilters = NO_FILTERS) -> QuerySet[CountedSession]:
    """Completed, counted sessions of the batch, newest first (the browser's list; index-ordered)."""
    rows = _filtered(CountedSession.objects.filter(batch=batch), filters, category_field="category")
    if filters.outcome is not None:
        rows = rows.filter(corrected_round=filters.outcome)
    return rows.select_related("session__task", "model_config", "annotator").order_by("-completed_at", "-session_id")


def session_for_batch(batch: Batch, session_id: int) -> Session:
    session = sessions_with_rounds().filter(pk=session_id, batch=batch).first()
    if session is None:
        raise NotFound(f"Session {session_id} is not in batch {batch.name!r}.")
    return session


def export_sessions(batch: Batch, filters: ReportFilters = NO_FILTERS) -> Iterator[Session]:
    """Completed sessions with rounds, task and images, streamed in chunks (for JSONL and FIRE exports). Each
    carries ``follows_reveal`` (its annotator had been shown the task's ground truth in an earlier session) and
    ``sequence_position`` (its place in its annotator's sequence of the batch, skipped and expired items counted:
    the order they were served in, for analyses of order effects)."""
    earlier_reveal = Session.objects.filter(
        annotator_id=OuterRef("annotator_id"), task_id=OuterRef("task_id"), revealed_at__lt=OuterRef("started_at")
    )
    sessions = _filtered(
        sessions_with_rounds().filter(batch=batch, status=Session.Status.COMPLETED), filters,
        category_field="task__category",
    ).annotate(follows_reveal=Exists(earlier_reveal), sequence_position=F("assignment__position"))
    if filters.outcome is not None:
        outcome = filters.outcome
        sessions = sessions.filter(corrected_round__isnull=True) if outcome == NEVER else sessions.filter(
            corrected_round=outcome
        )
    return sessions.order_by("id").iterator(chunk_size=1000)


def model_labels(names: Iterable[str]) -> dict[str, str]:
    """Model name -> the name tables and figures show (display name, else name; "(simulated)" for the demo
    student, which is never to pass for a real model)."""
    names = list(names)
    if not names:
        return {}
    return {model.name: model.label for model in ModelConfig.objects.filter(name__in=names)
            .only("name", "display_name", "backend")}
