"""Which work items the queue may serve an annotator: of batches open to them, not yet K times done, never twice
to the same person, never a task they may not see again, in serving order.

Who may be served at all: annotators and invited participants, never researchers or admins. Which
batches: an invited participant only the batch they joined; an annotator with an account the batches that name
them, and the batches that name no one unless they belong to another open batch (a batch's people see only their
batches; a batch marked open to all annotators is served to them too).
"""

from __future__ import annotations

from typing import Any, Protocol

from django.db.models import Exists, F, OuterRef, Q, QuerySet, Value

from annotate.models import Assignment, Batch, Session, Task, User, WorkItem
from annotate.participation import items_held_back
from annotate.shares import participant_share

# Batch kinds whose work the queue hands out: (task, model) pairs, or conversations to rate.
QUEUED_KINDS = (Batch.Kind.INTERFEEDBACK, Batch.Kind.FIRE, Batch.Kind.PREFERENCE)
CONVERSATION_KINDS = (Batch.Kind.FIRE, Batch.Kind.PREFERENCE)


def may_be_served(user: User) -> bool:
    """Annotators and invited participants are served items; researchers and admins read, never annotate."""
    return user.is_active and user.role == User.Role.ANNOTATOR and not user.is_superuser


def batch_open_to(annotator: User, batch: Batch, *, in_named_batch: bool | None = None) -> bool:
    """The batch serves this annotator now: it is open, and they are one of its annotators (an invited
    participant: of this batch, past the steps their study asks first, not ended, their share not yet full).
    ``in_named_batch``: whether an open batch names them, when the caller already knows (None: asked here)."""
    if batch.status != Batch.Status.READY or batch.kind not in QUEUED_KINDS or batch.budget_reached:
        return False
    if not may_be_served(annotator):
        return False
    if annotator.crowd_batch_id:
        share = participant_share(annotator, batch)
        return share is not None and not share.full and items_held_back(annotator, batch) is None
    if batch.annotators_named:
        return batch.annotators.filter(pk=annotator.pk).exists()
    if batch.open_to_all_annotators:
        return True
    return not (belongs_to_a_batch(annotator.pk).exists() if in_named_batch is None else in_named_batch)


def belongs_to_a_batch(annotator_id: int | OuterRef) -> QuerySet[Any]:
    """The open batches (not closed) that name the annotator: while there is one, they are its people, and batches
    naming no one are not served to them unless open to all annotators. ``annotator_id`` may be an OuterRef."""
    return Batch.annotators.through.objects.filter(user_id=annotator_id, batch__annotators_named=True).exclude(
        batch__status=Batch.Status.CLOSED)


def batches_serving(annotator: User, prefix: str = "batch__") -> Q:
    """Items of the batches that may serve the annotator (their share aside): for an invited participant the batch
    they joined, for others the batches naming them, those open to all annotators, and those naming no one while
    they belong to no open batch. ``prefix=""``: the same rule over batches instead of items."""
    return _serving(annotator.pk, annotator.crowd_batch_id, prefix)


def _serving(annotator_id: int, crowd_batch_id: int | None, prefix: str) -> Q:
    batch_id = f"{prefix}id" if prefix else "pk"
    if crowd_batch_id:
        return Q(**{batch_id: crowd_batch_id})
    named = Batch.annotators.through.objects.filter(user_id=annotator_id).values("batch_id")
    unnamed = Q(**{f"{prefix}open_to_all_annotators": True}) | ~Exists(belongs_to_a_batch(annotator_id))
    return (Q(**{f"{prefix}annotators_named": False}) & unnamed) | Q(**{f"{batch_id}__in": named})


def open_batches_for(annotator: User) -> QuerySet[Batch]:
    """The open batches that may serve the annotator (their share aside: see `batch_open_to`)."""
    if not may_be_served(annotator):
        return Batch.objects.none()
    return open_batches_of(annotator.pk, annotator.crowd_batch_id)


def open_batches_of(annotator_id: int, crowd_batch_id: int | None) -> QuerySet[Batch]:
    """`open_batches_for` a person who may be served, from their id and the batch they joined (an invited
    participant) alone."""
    return Batch.objects.filter(status=Batch.Status.READY, kind__in=QUEUED_KINDS, budget_reached=False).filter(
        _serving(annotator_id, crowd_batch_id, prefix=""))


def open_items(annotator: User, *, last_task_id: int | None = None) -> QuerySet[WorkItem]:
    """Items of every batch that may serve the annotator, in serving order (the first of any batch)."""
    if not may_be_served(annotator):
        return WorkItem.objects.none()
    items = WorkItem.objects.filter(
        batch__status=Batch.Status.READY,
        batch__kind__in=QUEUED_KINDS,
        batch__budget_reached=False,
        completed_count__lt=F("batch__overlap") - F("active_count"),
        is_check=False,
    ).filter(batches_serving(annotator))
    avoid = None
    if last_task_id is not None:  # not the same task twice in a row, where its batch says so
        avoid = Q(task_id=last_task_id) & Q(batch__allow_same_task_back_to_back=False)
    return not_yet_taken_by(items, annotator.pk, avoid, repeats=None)


class BatchRules(Protocol):
    """What `batch_items` and `check_items` read of a batch: a `Batch`, or these values alone (the queue's
    compiled reads build their queries from them, annotate.server.compiled_reads)."""

    @property
    def pk(self) -> Any: ...
    @property
    def overlap(self) -> int: ...
    @property
    def allow_repeat_tasks(self) -> bool: ...
    @property
    def allow_same_task_back_to_back(self) -> bool: ...


def batch_items(batch: BatchRules, annotator_id: int, *, last_task_id: int | None = None) -> QuerySet[WorkItem]:
    """A batch's open items for an annotator (the batch is open to them: see `batch_open_to`). Its settings go
    into the query as values (no join; the index range skips the items that already have K completed sessions)."""
    overlap = batch.overlap
    items = WorkItem.objects.filter(batch_id=batch.pk, completed_count__lt=overlap, is_check=False).filter(
        completed_count__lt=Value(overlap) - F("active_count")
    )
    avoid = None
    # Without repeats no task the annotator had comes again anyway: nothing more to avoid.
    if last_task_id is not None and batch.allow_repeat_tasks and not batch.allow_same_task_back_to_back:
        avoid = Q(task_id=last_task_id)
    return not_yet_taken_by(items, annotator_id, avoid, repeats=batch.allow_repeat_tasks)


def check_items(batch: BatchRules, annotator_id: int) -> QuerySet[WorkItem]:
    """The batch's attention checks the annotator may still meet: any check whose task they never had (whatever
    the batch says of repeats: a check seen once is known), however many others met it (checks are outside the
    overlap), in the batch's order. Walks the ``work_item_checks`` index."""
    seen = Session.objects.filter(annotator_id=annotator_id, task_id=OuterRef("task_id"))
    return (WorkItem.objects.filter(batch_id=batch.pk, is_check=True, pinned_to__isnull=True)
            .exclude(Exists(seen)).order_by("id"))


def not_yet_taken_by(items: QuerySet[WorkItem], annotator_id: int, avoid: Q | None, *,
                     repeats: bool | None) -> QuerySet[WorkItem]:
    """``items`` not pinned to someone else, never assigned to the annotator and of no task they may not see
    again (`_task_not_to_serve_again`), without ``avoid``, in serving order: pinned items first, then
    breadth-first (the pairs closest to K completed sessions), then the batch's order (the item ids: see
    annotate.queue.order)."""
    items = items.filter(Q(pinned_to__isnull=True) | Q(pinned_to=annotator_id))
    items = items.exclude(pk__in=Assignment.objects.filter(annotator_id=annotator_id).values("work_item_id"))
    items = items.exclude(_task_not_to_serve_again(annotator_id, repeats))
    if avoid is not None:
        items = items.exclude(avoid)
    return items.order_by(F("pinned_to").asc(nulls_last=True), "-completed_count", "id")


# The serving order above, for items of several batches compared in Python (each batch's first item).
SERVING_ORDER_FIELDS = ("pinned_to", "completed_count", "id")


def serving_rank(pinned_to: int | None, completed_count: int, item_id: int) -> tuple[bool, int, int]:
    """Sorts as `not_yet_taken_by` orders: pinned items first, then the pairs closest to K, then the batch order."""
    return pinned_to is None, -completed_count, item_id


# A task served again in a batch that allows repeats must not be under way for the annotator, nor one whose answer
# they have seen: revealed before the last round, or a manual task's reference (shown for judging from round 0).
_ANSWER_SEEN_OR_UNDER_WAY = (
    Q(revealed_at__isnull=False)
    | Q(task__answer_type=Task.AnswerType.MANUAL)
    | ~Q(status__in=[Session.Status.COMPLETED, Session.Status.ABANDONED])
)


def _task_not_to_serve_again(annotator_id: int, repeats: bool | None) -> Q | Exists:
    """Items whose task the annotator has had a session of (skipped, expired and abandoned ones too: they saw the
    question), or, where the batch allows repeats, only those whose answer they saw or that are under way.
    ``repeats`` None: each item's batch says. One probe of the sessions' task index per item stepped over (a task
    has at most models x K sessions)."""
    same_task = Session.objects.filter(annotator_id=annotator_id, task_id=OuterRef("task_id"))
    seen = Exists(same_task)
    not_repeatable = Exists(same_task.filter(_ANSWER_SEEN_OR_UNDER_WAY))
    if repeats is None:
        return (Q(batch__allow_repeat_tasks=False) & seen) | not_repeatable
    return not_repeatable if repeats else seen
