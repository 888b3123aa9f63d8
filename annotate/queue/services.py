"""The next-item queue: hands (task, model) work items, or conversations to rate, to annotators until each has K
completed sessions, never the same task twice to one person, in a balanced order.

- One item at a time per person: every reservation bumps the person's serving version in its own statement, and
  holds only if the version is still the one the request read first (annotate.queue.reservation); a request that
  lost that race with another of theirs starts over and resumes what the other reserved, so a participant's share
  holds under any race. Nothing is locked across statements and other people's requests never wait on theirs.
- A reservation locks the first free item of the first tier that has one (``select_for_update(skip_locked=True)``:
  others step over it) and takes a short lease on it, renewed by the page's heartbeat. Expired leases go back to
  the pool: a Celery beat task sweeps them (annotate.queue.tasks), and the queue sweeps at once when it finds
  nothing for someone.
- Balance between models: items are created in the batch's seeded order, and each annotator is served the models
  in turn, starting where their arrival puts them (annotate.queue.order).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Exists, F, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from annotate.assignments import assignment_renew, assignments_expire
from annotate.errors import PermissionDenied
from annotate.models import Assignment, Batch, User, WorkItem
from annotate.queue.gold import check_due
from annotate.queue.items import (
    CONVERSATION_KINDS,
    QUEUED_KINDS,
    SERVING_ORDER_FIELDS,
    batch_items,
    batch_open_to,
    batches_serving,
    belongs_to_a_batch,
    check_items,
    may_be_served,
    not_yet_taken_by,
    open_batches_for,
    open_batches_of,
    serving_rank,
)
from annotate.queue.order import model_cycle, model_for, serving_order
from annotate.queue.reservation import Claim, RaceLost, Reserved, one_statement_here, reservation_take
from annotate.queue.selectors import batch_named
from annotate.server import compiled_reads
from annotate.sessions import services as session_services
from annotate.shares import participant_share


def work_items_create_for_batch(*, batch: Batch) -> int:
    """One work item per (task, model) of an InterFeedback batch, in the batch's serving order (a gold task's are
    attention checks), or per conversation of a FIRE/preference batch; existing items are kept (new ones follow)."""
    if batch.kind in CONVERSATION_KINDS:
        existing = WorkItem.objects.filter(batch=batch, conversation__isnull=False).values("conversation_id")
        conversation_ids = batch.conversations.exclude(id__in=existing).order_by("position", "id")
        new_items = [WorkItem(batch=batch, conversation_id=cid) for cid in conversation_ids.values_list("id", flat=True)]
        WorkItem.objects.bulk_create(new_items, batch_size=5000)
        return len(new_items)
    model_ids = list(batch.models_to_evaluate.values_list("id", flat=True))
    cycle = model_cycle(batch.serving_seed, model_ids)
    if batch.serving_models != cycle:
        Batch.objects.filter(pk=batch.pk).update(serving_models=cycle)
        batch.serving_models = cycle
    existing_pairs = set(WorkItem.objects.filter(batch=batch).values_list("task_id", "model_config_id"))
    gold = dict(batch.tasks.order_by("id").values_list("id", "is_gold"))
    new = [WorkItem(batch=batch, task_id=task_id, model_config_id=model_id, is_check=gold[task_id])
           for task_id, model_id in serving_order(batch.serving_seed, list(gold), model_ids)
           if (task_id, model_id) not in existing_pairs]
    WorkItem.objects.bulk_create(new, batch_size=5000)
    return len(new)


@dataclass(frozen=True)
class _Person:
    """What a next-item request reads of the person first: their serving version (every reservation of theirs bumps
    it), whether some item is pinned to them, whether an open batch names them and whether they have had any item."""

    version: int
    has_pinned: bool
    in_named_batch: bool
    has_assignment: bool


def _person_query(locked: bool, *, annotator_id: int) -> QuerySet[Any]:
    """``locked``: FOR NO KEY UPDATE, so that rows pointing at the annotator (their sessions, ratings) can still be
    written meanwhile."""
    users = User.objects.select_for_update(no_key=True) if locked else User.objects.all()
    return (users.filter(pk=annotator_id)
            .annotate(has_pinned=Exists(WorkItem.objects.filter(pinned_to=annotator_id)),
                      in_named_batch=Exists(belongs_to_a_batch(annotator_id)),
                      has_assignment=Exists(Assignment.objects.filter(annotator_id=annotator_id)))
            .values_list("serving_version", "has_pinned", "in_named_batch", "has_assignment"))


def _read_person(annotator: User, *, locked: bool) -> _Person:
    found = compiled_reads.rows(_person_query, (locked,), {"annotator_id": annotator.pk})
    if found is None:
        return _Person(*_person_query(locked, annotator_id=annotator.pk).get())
    if not found:
        raise User.DoesNotExist(f"user {annotator.pk} was deleted while being served")
    return _Person(*found[0])


def _latest_query(annotator_id: int) -> QuerySet[Assignment]:
    return Assignment.objects.filter(annotator_id=annotator_id).order_by("-created_at")


def _latest_assignment(annotator: User) -> Assignment | None:
    """The person's latest assignment with its work item, batch and session (None: a newcomer). Read after their
    serving version, so a reservation of theirs that this misses has moved the version on."""
    found = compiled_reads.fetch(_latest_query, (), {"annotator_id": annotator.pk},
                                 related=("work_item__batch", "session"), first=True)
    return found[0] if found else None


def _resumable(assignment: Assignment) -> bool:
    return assignment.status == Assignment.Status.ACTIVE and assignment.lease_expires_at >= timezone.now()


class _ArrivalToCount(Exception):
    """A newcomer to a batch of several models: their arrival is counted once, so this request is served under the
    lock on their row."""


_TRIES = 10  # a request that lost a race with another of the same person resumes that one's item when it retries


def assignment_next(*, annotator: User, batch: Batch | None = None, batch_name: str | None = None) -> Assignment | None:
    """Resume the annotator's item under way (whatever the batch: one at a time), or reserve the next open work item
    (of ``batch``, or of the batch named ``batch_name``, else of the batch they work on) and start its session.
    Researchers and admins are refused; a name no batch has is `NotFound`.

    One item at a time per person: on PostgreSQL the reservation holds only if the person's serving version is still
    the one this request read (annotate.queue.reservation), and a request that lost that race starts over; a
    newcomer's arrival in a batch of several models, and SQLite, take a lock on the person's row instead."""
    if not may_be_served(annotator):
        raise PermissionDenied(_("Only annotators are served items to annotate."))
    locked, swept = not one_statement_here(), False
    for _try in range(_TRIES):
        try:
            assignment = _next_in_turn(annotator, batch, batch_name, locked=locked)
        except _ArrivalToCount:
            locked = True
            continue
        except RaceLost:
            continue
        if assignment is None and not locked:
            # Nothing for them may rest on reads taken at different moments while another request of theirs was
            # reserving (their share seen full, their version not yet moved): the answer is given under the lock,
            # once any such request is done.
            locked = True
            continue
        if assignment is None and not swept:
            swept = True
            if assignments_expire():  # leases that ran out since the last sweep freed their items
                continue
        return assignment
    raise RuntimeError(f"annotator {annotator.pk}: {_TRIES} next-item tries each lost a race with another of theirs")


def _next_in_turn(annotator: User, batch: Batch | None, batch_name: str | None, *, locked: bool) -> Assignment | None:
    with transaction.atomic() if locked else nullcontext():
        person = _read_person(annotator, locked=locked)
        # Under the lock, the version is the row's newest but the rest of that read may predate the request that
        # held the lock: their latest assignment is read after it.
        latest = _latest_assignment(annotator) if person.has_assignment or locked else None
        if batch_name is not None:
            batch = _batch_named(batch_name, latest)
        if latest is not None and _resumable(latest):
            assignment_renew(assignment=latest)
            return latest
        if batch is None and annotator.crowd_batch_id:
            batch = latest.work_item.batch if latest and latest.work_item.batch_id == annotator.crowd_batch_id \
                else Batch.objects.filter(pk=annotator.crowd_batch_id).first()
        if batch is not None:
            open_to = batch_open_to(annotator, batch, in_named_batch=person.in_named_batch)
            return _reserve(annotator, batch, latest, person, locked=locked) if open_to else None
        if latest is not None:  # a person stays with their latest batch while it has items for them
            batch = latest.work_item.batch
            if batch_open_to(annotator, batch, in_named_batch=person.in_named_batch):
                assignment = _reserve(annotator, batch, latest, person, locked=locked)
                # Nothing reserved: its items are only held by others for now, or it has none left for them (the
                # one case that costs a second walk, at the end of a batch).
                if assignment is not None or batch_items(batch, annotator.pk,
                                                         last_task_id=latest.work_item.task_id).exists():
                    return assignment
        batch = _first_open_batch(annotator, latest)  # of the batches open to them: no second check
        return None if batch is None else _reserve(annotator, batch, latest, person, locked=locked)


def _batch_named(name: str, latest: Assignment | None) -> Batch:
    """The batch a request names: the one of their latest assignment, read with it, when it has that name (an API
    client walking its batch: no query of its own), else read by name."""
    if latest is not None and latest.work_item.batch.name == name:
        return latest.work_item.batch
    return batch_named(name)


def _first_open_batch(annotator: User, latest: Assignment | None) -> Batch | None:
    """The batch of the first item open to the annotator anywhere, in serving order. Each open batch's first item
    comes from a walk of its ``work_item_queue`` index (well under a millisecond); one query over every batch's items
    would sort them all (~70 ms with 100k items, for each newcomer)."""
    last_task_id = latest.work_item.task_id if latest else None
    batches = _open_batches(annotator)
    if len(batches) == 1:  # the usual case: its first item is the one `_reserve` walks to
        return batches[0]
    firsts = []
    for batch in batches:
        first = batch_items(batch, annotator.pk, last_task_id=last_task_id).values_list(*SERVING_ORDER_FIELDS).first()
        if first is not None:
            firsts.append((serving_rank(*first), batch))
    return min(firsts, key=lambda first: first[0])[1] if firsts else None


def _open_batches(annotator: User) -> list[Batch]:
    if not may_be_served(annotator):
        return []
    participant = bool(annotator.crowd_batch_id)
    values: dict[str, Any] = {"annotator_id": annotator.pk}
    if participant:
        values["crowd_batch_id"] = annotator.crowd_batch_id
    return compiled_reads.fetch(_open_batches_query, (participant,), values)


def _open_batches_query(participant: bool, *, annotator_id: int, crowd_batch_id: int | None = None) -> QuerySet[Batch]:
    return open_batches_of(annotator_id, crowd_batch_id if participant else None)


@dataclass(frozen=True)
class _Previous:
    model_config_id: int | None
    position: int


def _previous_in(batch: Batch, annotator: User, latest: Assignment | None) -> _Previous | None:
    """The annotator's latest item in this batch (None: they start on it)."""
    if latest is None:
        return None
    if latest.work_item.batch_id == batch.pk:
        return _Previous(latest.work_item.model_config_id, latest.position)
    row = (Assignment.objects.filter(annotator=annotator, work_item__batch_id=batch.pk).order_by("-created_at")
           .values_list("work_item__model_config_id", "position").first())
    return None if row is None else _Previous(*row)


def _model_wanted(batch: Batch, previous: _Previous | None, *, locked: bool) -> int | None:
    """The model the annotator's next item should be of (None: any). A newcomer to a batch of several models is
    counted in, and starts at the model their arrival puts them on."""
    cycle = batch.serving_models
    if batch.kind != Batch.Kind.INTERFEEDBACK or len(cycle) < 2:
        return None
    arrival = 0
    if previous is None:
        if not locked:
            raise _ArrivalToCount
        Batch.objects.filter(pk=batch.pk).update(annotators_started=F("annotators_started") + 1)
        arrival = Batch.objects.values_list("annotators_started", flat=True).get(pk=batch.pk) - 1
    return model_for(cycle, previous=previous.model_config_id if previous else None, arrival=arrival)


@dataclass(frozen=True)
class _Rules:
    """What the item queries read of a batch (annotate.queue.items.BatchRules), as plain values."""

    pk: int
    overlap: int
    allow_repeat_tasks: bool
    allow_same_task_back_to_back: bool


def _free_items(kind: str, repeats: bool, back_to_back: bool, has_last: bool, by_model: bool, *, batch_id: int,
                overlap: int, annotator_id: int, last_task_id: int | None = None,
                model_id: int | None = None) -> QuerySet[WorkItem]:
    """The free items of one walk (the reservation locks the one it takes, and others step over locked rows):
    ``kind`` "pinned" (those pinned to the annotator), "check" (attention checks) or "ordinary"; ``by_model``: of
    ``model_id`` only. The other positional arguments say what changes the SQL (compiled_reads' shape)."""
    rules = _Rules(batch_id, overlap, repeats, back_to_back)
    if kind == "check":
        items = check_items(rules, annotator_id)
    else:
        items = batch_items(rules, annotator_id, last_task_id=last_task_id if has_last else None)
        items = items.filter(pinned_to=annotator_id) if kind == "pinned" else items.filter(pinned_to__isnull=True)
    if by_model:
        items = items.filter(model_config_id=model_id)
    return items


def _take_first_free(kind: str, batch: Batch, last_task_id: int | None, model_ids: list[int | None],
                     claim: Claim) -> Reserved | None:
    """Reserve the first free item of the first tier that has one: of each model of ``model_ids`` in turn (None:
    any), each an ordered walk of an index that stops at the first free row."""
    for model_id in model_ids:
        shape, values = _free_walk(kind, batch, claim.annotator_id, last_task_id=last_task_id, model_id=model_id)
        reserved = reservation_take(_free_items, shape, values, claim)
        if reserved is not None:
            return reserved
    return None


def _free_walk(kind: str, batch: Batch, annotator_id: int, *, last_task_id: int | None,
              model_id: int | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`_free_items`' shape and values for one walk of ``batch``: after ``last_task_id`` (None: none, and never for
    checks), of ``model_id`` (None: any)."""
    has_last = last_task_id is not None and kind != "check"
    values: dict[str, Any] = {"batch_id": batch.pk, "overlap": batch.overlap, "annotator_id": annotator_id}
    if has_last:
        values["last_task_id"] = last_task_id
    if model_id is not None:
        values["model_id"] = model_id
    return (kind, batch.allow_repeat_tasks, batch.allow_same_task_back_to_back, has_last, model_id is not None), values


def _reserve(annotator: User, batch: Batch, latest: Assignment | None, person: _Person, *,
             locked: bool) -> Assignment | None:
    """Reserve the annotator's next item of the batch: an item pinned to them, else an attention check where their
    plan puts one (annotate.queue.gold), else the first free ordinary item; count it active, take a lease on it and
    start its session (round 0 is queued on commit)."""
    previous = _previous_in(batch, annotator, latest)
    model_id = _model_wanted(batch, previous, locked=locked)
    position = (previous.position if previous else 0) + 1
    last_task_id = latest.work_item.task_id if latest else None
    claim = Claim(annotator.pk, person.version, position, batch.pk, with_session=batch.kind not in CONVERSATION_KINDS)
    # The model whose turn it is, then any.
    tiers: list[int | None] = [model_id, None] if model_id is not None else [None]
    reserved = _take_first_free("pinned", batch, last_task_id, [None], claim) if person.has_pinned else None
    if reserved is None and check_due(annotator, batch, position):
        reserved = _take_first_free("check", batch, last_task_id, tiers, claim)
    if reserved is None:
        reserved = _take_first_free("ordinary", batch, last_task_id, tiers, claim)
    if reserved is None:
        return None
    if reserved.session is not None and reserved.first_round is not None:
        session_services.round_generation_queue(reserved.first_round.id, reserved.session.model_config)  # on commit
    return reserved.assignment


def open_items_count(*, annotator: User, up_to: int | None = None) -> int:
    """How many more items the annotator could be served (the home page's "Remaining"): one per task where nobody
    is served a task twice, one per item elsewhere, and no more than a participant's share has left. Counts at most
    ``up_to`` (and no further than the share's end): each batch's count stops there, a few milliseconds, where an
    exact count of a 100k-item batch reads every item (~1 s)."""
    if annotator.crowd_batch_id:
        share = participant_share(annotator, Batch.objects.get(pk=annotator.crowd_batch_id))
        if share is not None and share.left is not None:
            up_to = share.left if up_to is None else min(up_to, share.left)
    remaining = 0
    for batch in open_batches_for(annotator):
        if up_to is not None and remaining >= up_to:
            break
        items = batch_items(batch, annotator.pk).order_by()
        one_per_task = batch.kind not in CONVERSATION_KINDS and not batch.allow_repeat_tasks
        counted = items.values("task_id").distinct() if one_per_task else items.values("id")
        remaining += (counted if up_to is None else counted[: up_to - remaining]).count()
    return remaining


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
    if not may_be_served(annotator) or (batch is not None and not batch_open_to(annotator, batch)):
        return NothingToServe("done")
    if annotator.crowd_batch_id and batch is None and not batch_open_to(
            annotator, Batch.objects.get(pk=annotator.crowd_batch_id)):
        return NothingToServe("done")  # their share is full, or their study closed
    items = WorkItem.objects.filter(batch__status=Batch.Status.READY, batch__kind__in=QUEUED_KINDS,
                                    batch__budget_reached=False, completed_count__lt=F("batch__overlap"),
                                    is_check=False)
    if batch is not None:
        items = items.filter(batch=batch)
    items = not_yet_taken_by(items.filter(batches_serving(annotator)), annotator.pk, None, repeats=None)
    if not items.exists():
        return NothingToServe("done")
    held_until = Assignment.objects.filter(
        work_item__in=items, status=Assignment.Status.ACTIVE).order_by("lease_expires_at").values_list(
        "lease_expires_at", flat=True).first()
    if held_until is None:
        return NothingToServe("wait", WAIT_SECONDS_BLOCKED)
    seconds = round((held_until - timezone.now()).total_seconds())
    return NothingToServe("wait", min(WAIT_SECONDS_MAX, max(WAIT_SECONDS_MIN, seconds)))
