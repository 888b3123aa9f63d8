"""The next-item queue: hands (task, model) work items to annotators until each has K completed sessions.

Reservation is a row lock taken with ``select_for_update(skip_locked=True)`` plus a short lease renewed by the
page's heartbeat; expired leases go back to the pool.
"""

from __future__ import annotations

import functools
import operator
import time
from dataclasses import dataclass
from datetime import datetime
from functools import reduce

from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Value
from django.utils import timezone

from annotate.assignments import assignment_renew, assignments_expire, lease_end
from annotate.models import Assignment, Batch, Session, Task, User, WorkItem
from annotate.server import single_statement
from annotate.server.prepared import PreparedQuery

# Batch kinds whose work the queue hands out: (task, model) pairs, or conversations to rate.
QUEUED_KINDS = (Batch.Kind.INTERFEEDBACK, Batch.Kind.FIRE, Batch.Kind.PREFERENCE)
CONVERSATION_KINDS = (Batch.Kind.FIRE, Batch.Kind.PREFERENCE)


def work_items_create_for_batch(*, batch: Batch) -> int:
    """One work item per (task, model) of an InterFeedback batch, or per conversation of a FIRE/preference
    batch; existing items are kept."""
    if batch.kind in CONVERSATION_KINDS:
        existing = WorkItem.objects.filter(batch=batch, conversation__isnull=False).values("conversation_id")
        conversation_ids = batch.conversations.exclude(id__in=existing).order_by("position", "id")
        new_items = [WorkItem(batch=batch, conversation_id=cid) for cid in conversation_ids.values_list("id", flat=True)]
        WorkItem.objects.bulk_create(new_items, batch_size=5000)
        return len(new_items)
    existing = set(WorkItem.objects.filter(batch=batch).values_list("task_id", "model_config_id"))
    model_ids = list(batch.models_to_evaluate.order_by("id").values_list("id", flat=True))
    task_ids = list(batch.tasks.values_list("id", flat=True))
    # Model-major order: with equal progress the queue serves the first model's pairs first.
    new = [
        WorkItem(batch=batch, task_id=task_id, model_config_id=model_id)
        for model_id in model_ids
        for task_id in task_ids
        if (task_id, model_id) not in existing
    ]
    WorkItem.objects.bulk_create(new, batch_size=5000)
    return len(new)








@dataclass(frozen=True)
class _QueueState:
    last_task_id: int | None  # the task of the annotator's latest assignment
    has_pinned: bool  # some work item is pinned to the annotator


@dataclass(frozen=True)
class _Latest:
    """What the queue needs of the annotator's latest assignment: whether to resume it, and its task."""

    id: int
    status: str
    lease_expires_at: datetime
    batch_id: int
    task_id: int | None

    def resumable(self, batch: Batch | None) -> bool:
        return (self.status == Assignment.Status.ACTIVE and self.lease_expires_at >= timezone.now()
                and (batch is None or self.batch_id == batch.id))


def _queue_state(latest: _Latest | None, has_pinned: bool) -> _QueueState:
    return _QueueState(last_task_id=latest.task_id if latest else None, has_pinned=has_pinned)


def _open_items(annotator: User, batch: Batch | None, state: _QueueState | None = None):
    state = state or _queue_state(*_latest_assignment(annotator))
    if batch is not None:
        if not _batch_open_to(annotator, batch):
            return WorkItem.objects.none()
        return _batch_items(batch.pk, batch.overlap, annotator.pk, _task_to_avoid(batch, state),
                            batch.allow_repeat_tasks)
    items = WorkItem.objects.filter(
        batch__status=Batch.Status.READY,
        batch__kind__in=QUEUED_KINDS,
        batch__budget_reached=False,
        completed_count__lt=F("batch__overlap") - F("active_count"),
    )
    if annotator.crowd_batch_id:  # invited participants work only on the batch they joined
        limit = Batch.objects.filter(pk=annotator.crowd_batch_id).values_list("items_per_participant", flat=True)
        if _participant_quota_reached(annotator, limit.first()):
            return WorkItem.objects.none()
        items = items.filter(batch_id=annotator.crowd_batch_id)
    else:
        items = items.filter(_batches_serving(annotator.pk))
    avoid = None
    if state.last_task_id is not None:  # not the same task twice in a row, where its batch says so
        avoid = Q(task_id=state.last_task_id) & Q(batch__allow_same_task_back_to_back=False)
    return _not_yet_taken_by(items, annotator.pk, avoid, repeats=None)


def _batch_open_to(annotator: User, batch: Batch) -> bool:
    if batch.status != Batch.Status.READY or batch.kind not in QUEUED_KINDS or batch.budget_reached:
        return False
    if annotator.crowd_batch_id:  # an invited participant: only the batch they joined, up to its quota
        return annotator.crowd_batch_id == batch.pk and not _participant_quota_reached(
            annotator, batch.items_per_participant)
    return not batch.annotators_named or batch.annotators.filter(pk=annotator.pk).exists()


def _batches_serving(annotator_id: int) -> Q:
    """Items of batches served to every annotator, or that name this one among their annotators."""
    named = Batch.annotators.through.objects.filter(user_id=annotator_id).values("batch_id")
    return Q(batch__annotators_named=False) | Q(batch_id__in=named)


def _task_to_avoid(batch: Batch, state: _QueueState) -> int | None:
    """The task not to serve next (the latest one), unless the batch allows the same task back to back. Without
    repeats no task the annotator had comes again anyway: nothing more to avoid."""
    if batch.allow_same_task_back_to_back or not batch.allow_repeat_tasks:
        return None
    return state.last_task_id


def _batch_items(batch_id: int, overlap: int, annotator_id: int, avoid_task_id: int | None, repeats: bool):
    """A batch's open items for an annotator. The batch is at hand: its settings go into the query as values
    (no join; the index range skips the items that already have K completed sessions)."""
    items = WorkItem.objects.filter(batch_id=batch_id, completed_count__lt=overlap).filter(
        completed_count__lt=Value(overlap) - F("active_count")
    )
    avoid = None if avoid_task_id is None else Q(task_id=avoid_task_id)
    return _not_yet_taken_by(items, annotator_id, avoid, repeats=repeats)


def _not_yet_taken_by(items, annotator_id: int, avoid: Q | None, *, repeats: bool | None):
    """``items`` not pinned to someone else, never assigned to the annotator and of no task they may not see
    again (`_task_not_to_serve_again`), without ``avoid``, in serving order: pinned items first, then
    breadth-first (the pairs closest to K completed sessions)."""
    items = items.filter(Q(pinned_to__isnull=True) | Q(pinned_to=annotator_id))
    items = items.exclude(pk__in=Assignment.objects.filter(annotator_id=annotator_id).values("work_item_id"))
    items = items.exclude(_task_not_to_serve_again(annotator_id, repeats))
    if avoid is not None:
        items = items.exclude(avoid)
    return items.order_by(F("pinned_to").asc(nulls_last=True), "-completed_count", "id")


# A task served again in a batch that allows repeats must not be under way for the annotator, nor one whose answer
# they have seen: revealed before the last round, or a manual task's reference (shown for judging from round 0).
_ANSWER_SEEN_OR_UNDER_WAY = (
    Q(revealed_at__isnull=False)
    | Q(task__answer_type=Task.AnswerType.MANUAL)
    | ~Q(status__in=[Session.Status.COMPLETED, Session.Status.ABANDONED])
)


def _task_not_to_serve_again(annotator_id: int, repeats: bool | None) -> Q:
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


@functools.cache
def _first_free_in_batch(avoiding_a_task: bool, pinned: bool, repeats: bool) -> PreparedQuery:
    """The usual next-item query (a batch without gold items, one tier), compiled once per shape: arguments
    (batch id, overlap, annotator id[, task to avoid])."""
    def build(batch_id, overlap, annotator_id, avoid_task_id=None):
        tier = _pinned_tier(annotator_id, pinned)
        items = _batch_items(batch_id, overlap, annotator_id, avoid_task_id, repeats)
        return items.filter(tier).values_list("id")[:1]

    return PreparedQuery(build, *[int] * (4 if avoiding_a_task else 3))


def _participant_quota_reached(annotator: User, limit: int | None) -> bool:
    """An invited participant has taken their batch's ``items_per_participant`` (finished or under way; skipped
    and expired items do not count). Only participants of a batch with a limit pay the count query."""
    if not limit:
        return False
    taken = Assignment.objects.filter(
        annotator=annotator, work_item__batch_id=annotator.crowd_batch_id,
        status__in=[Assignment.Status.ACTIVE, Assignment.Status.COMPLETED],
    )
    return taken.count() >= limit


def _pinned_tier(annotator_id: int, pinned: bool) -> Q:
    """The items pinned to the annotator, or the items pinned to no one."""
    return Q(pinned_to=annotator_id) if pinned else Q(pinned_to__isnull=True)


def _preference_tiers(annotator: User, batch: Batch | None, state: _QueueState) -> list[Q]:
    """The filters `assignment_next` tries in turn: the items pinned to the annotator (if any), then (in batches
    with a gold rate) gold items when one is due and ordinary ones otherwise, then the rest. One query per tier
    tried, each an ordered walk of the ``work_item_queue`` index that stops at the first free row (no sort)."""
    pinned = [_pinned_tier(annotator.pk, True)] if state.has_pinned else []
    unpinned = _pinned_tier(annotator.pk, False)
    gold = gold_preference(annotator, batch=batch)
    if gold is None:
        return [*pinned, unpinned]
    preferred, other = gold
    return [*pinned, unpinned & preferred, unpinned & other]


def gold_due(*, gold_rate: float, served: int, gold_served: int) -> bool:
    """Is the annotator's next item of a batch due to be gold? Keeps gold at ``gold_rate`` of the items served:
    the n-th item is gold when fewer than floor(rate * n) of the first n would otherwise be (so the first items
    are ordinary ones unless the rate is 1)."""
    return gold_served < int(gold_rate * (served + 1) + 1e-9)


def gold_preference(annotator: User, *, batch: Batch | None = None) -> tuple[Q, Q] | None:
    """(preferred, other): serves gold tasks (Task.is_gold) at each batch's ``gold_rate`` for this annotator —
    gold first in batches where one is due, ordinary items first in the other gold batches, no preference in
    batches without a gold rate. None (and no query when the batch is given) when no batch has a gold rate."""
    if batch is not None:
        rates = {batch.pk: batch.gold_rate} if batch.gold_rate > 0 else {}
    else:
        ready = Batch.objects.filter(status=Batch.Status.READY, gold_rate__gt=0)
        if annotator.crowd_batch_id:
            ready = ready.filter(pk=annotator.crowd_batch_id)
        rates = dict(ready.values_list("id", "gold_rate"))
    if not rates:
        return None
    served = (
        Assignment.objects.filter(annotator=annotator, work_item__batch_id__in=list(rates))
        .exclude(status=Assignment.Status.EXPIRED)
        .values("work_item__batch_id")
        .annotate(total=Count("id"), gold=Count("id", filter=Q(work_item__task__is_gold=True)))
        .order_by()
    )
    counts = {row["work_item__batch_id"]: (row["total"], row["gold"]) for row in served}
    due = [b for b, rate in rates.items() if gold_due(gold_rate=rate, served=counts.get(b, (0, 0))[0],
                                                       gold_served=counts.get(b, (0, 0))[1])]
    not_due = [b for b in rates if b not in due]
    is_gold = Q(task__is_gold=True)
    not_gold = Q(task__is_gold=False) | Q(task__isnull=True)  # conversations are never gold
    preferred, other = [~Q(batch_id__in=list(rates))], []
    if due:
        preferred.append(Q(batch_id__in=due) & is_gold)
        other.append(Q(batch_id__in=due) & not_gold)
    if not_due:
        preferred.append(Q(batch_id__in=not_due) & not_gold)
        other.append(Q(batch_id__in=not_due) & is_gold)
    return reduce(operator.or_, preferred), reduce(operator.or_, other)


# Expired leases are returned by a probe on the next-item path, at most this often per process (and always when
# the queue seems empty), so a busy queue does not pay a query per request for it.
EXPIRY_CHECK_SECONDS = 5.0
_next_expiry_check = 0.0


def _expire_now_and_then() -> bool:
    """Run `assignments_expire` if the last run in this process is old enough; True if it ran."""
    global _next_expiry_check
    now = time.monotonic()
    if now < _next_expiry_check:
        return False
    _next_expiry_check = now + EXPIRY_CHECK_SECONDS
    assignments_expire()
    return True


_LATEST_ASSIGNMENT = PreparedQuery(
    lambda annotator_id: Assignment.objects.filter(annotator_id=annotator_id)
    .annotate(has_pinned=Exists(WorkItem.objects.filter(pinned_to=annotator_id)))
    .order_by("-created_at")
    .values_list("id", "status", "lease_expires_at", "work_item__batch_id", "work_item__task_id", "has_pinned")[:1],
    int,
)


def _latest_assignment(annotator: User) -> tuple[_Latest | None, bool]:
    """The annotator's latest assignment and whether some item is pinned to them, in one query: it is both the
    assignment to resume and the task not to serve twice in a row. Plain values, not model instances with their
    item and session, and compiled once per process: building that query cost more CPU than anything else on the
    next-item path."""
    row = _LATEST_ASSIGNMENT.first(annotator.pk)
    if row is None:  # a newcomer
        return None, WorkItem.objects.filter(pinned_to=annotator).exists()
    return _Latest(*row[:5]), row[5]


def _reserve(annotator: User, batch: Batch | None, state: _QueueState) -> Assignment | None:
    """Lock the first free item of the first preference tier that has one, take a lease on it and start its
    session (round 0 is queued on commit)."""
    if single_statement.supported():
        return _reserve_in_one_statement(annotator, batch, state)
    from annotate.sessions.services import session_start  # sessions imports queue for completion

    with transaction.atomic():
        items = (
            _open_items(annotator, batch, state)
            .select_related("model_config")
            .select_for_update(skip_locked=True, of=("self",))
        )
        item = None
        for tier in _preference_tiers(annotator, batch, state):
            item = items.filter(tier).first()
            if item is not None:
                break
        if item is None:
            return None
        WorkItem.objects.filter(pk=item.pk).update(active_count=F("active_count") + 1)
        assignment = Assignment.objects.create(work_item=item, annotator=annotator, lease_expires_at=lease_end())
        if item.task_id is not None:  # a conversation to rate needs no session
            session_start(assignment=assignment)
    return assignment


def _candidate_selects(annotator: User, batch: Batch | None, state: _QueueState):
    """The SQL (and parameters) of the first free item of each preference tier in turn. A batch without gold
    items (the usual case) takes its compiled query; anything else is built by the ORM."""
    if batch is not None and batch.gold_rate == 0:
        if not _batch_open_to(annotator, batch):
            return
        avoid = _task_to_avoid(batch, state)
        args = (batch.pk, batch.overlap, annotator.pk, *([] if avoid is None else [avoid]))
        for pinned in [True, False] if state.has_pinned else [False]:
            yield _first_free_in_batch(avoid is not None, pinned, batch.allow_repeat_tasks).sql(*args)
        return
    items = _open_items(annotator, batch, state)
    if items.query.is_empty():
        return
    for tier in _preference_tiers(annotator, batch, state):
        yield items.filter(tier).values_list("id")[:1].query.sql_with_params()


def _reserve_in_one_statement(annotator: User, batch: Batch | None, state: _QueueState) -> Assignment | None:
    """As the ORM path of `_reserve`, in one statement per preference tier tried (PostgreSQL)."""
    from annotate.sessions.services import round_generation_queue, session_new

    # The item is not known yet: the statement fills in its columns (and the ids it makes). A tier that finds no
    # free item leaves the instances as they are, for the next tier.
    assignment = Assignment(work_item=WorkItem(), annotator=annotator, lease_expires_at=lease_end())
    session, first_round = session_new(assignment=assignment)
    for select in _candidate_selects(annotator, batch, state):
        if single_statement.reserve(select, assignment, session, first_round):
            if first_round.pk is not None:  # a conversation to rate has no session
                round_generation_queue(first_round.id, session.model_config)
            return assignment
    return None


def assignment_next(*, annotator: User, batch: Batch | None = None) -> Assignment | None:
    """Resume the annotator's active assignment (their latest, while its lease runs), or reserve the next open
    work item and start its session."""
    latest, has_pinned = _latest_assignment(annotator)
    if latest is not None and latest.resumable(batch):
        assignment = Assignment.objects.select_related("work_item", "session").get(pk=latest.id)
        assignment_renew(assignment=assignment)
        return assignment
    state = _queue_state(latest, has_pinned)
    expired_checked = _expire_now_and_then()
    assignment = _reserve(annotator, batch, state)
    if assignment is None and not expired_checked and assignments_expire():
        assignment = _reserve(annotator, batch, state)  # leases that ran out since the last probe free their items
    return assignment


def open_items_count(*, annotator: User) -> int:
    """How many items the annotator could still be served (for the progress line)."""
    return _open_items(annotator, None).count()


@dataclass(frozen=True)
class NothingToServe:
    """Why `assignment_next` found nothing: ``done`` (the annotator's share is finished, no item will come back)
    or ``wait`` (items are left but held by others or blocked for now; ask again after ``retry_after`` s)."""

    state: str
    retry_after: int | None = None


WAIT_SECONDS_MIN, WAIT_SECONDS_MAX = 5, 60
WAIT_SECONDS_BLOCKED = 30  # an item blocked for this annotator by a rule (e.g. not the same task back to back)


def nothing_to_serve(*, annotator: User, batch: Batch | None = None) -> NothingToServe:
    """Tell a finished share from a queue that is only busy: the items the annotator could still be served if
    nobody else held them (reservations, sessions under way) and no back-to-back rule applied."""
    if batch is not None and not _batch_open_to(annotator, batch):
        return NothingToServe("done")
    items = WorkItem.objects.filter(batch__status=Batch.Status.READY, batch__kind__in=QUEUED_KINDS,
                                    batch__budget_reached=False, completed_count__lt=F("batch__overlap"))
    if batch is not None:
        items = items.filter(batch=batch)
    if annotator.crowd_batch_id:
        limit = Batch.objects.filter(pk=annotator.crowd_batch_id).values_list("items_per_participant", flat=True)
        if _participant_quota_reached(annotator, limit.first()):
            return NothingToServe("done")
        items = items.filter(batch_id=annotator.crowd_batch_id)
    else:
        items = items.filter(_batches_serving(annotator.pk))
    items = _not_yet_taken_by(items, annotator.pk, None, repeats=None)
    if not items.exists():
        return NothingToServe("done")
    held_until = Assignment.objects.filter(
        work_item__in=items, status=Assignment.Status.ACTIVE).order_by("lease_expires_at").values_list(
        "lease_expires_at", flat=True).first()
    if held_until is None:
        return NothingToServe("wait", WAIT_SECONDS_BLOCKED)
    seconds = round((held_until - timezone.now()).total_seconds())
    return NothingToServe("wait", min(WAIT_SECONDS_MAX, max(WAIT_SECONDS_MIN, seconds)))
