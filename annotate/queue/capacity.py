"""Can a batch's annotators finish it? (models x overlap different people per task)

Nobody is served a task twice (unless the batch allows repeats), so each task of an InterFeedback batch needs
models × overlap different people, and each conversation to rate needs overlap different raters. With fewer
people than that who may work on the batch, part of it can never be served: the import report (dry run too),
the batch report and the dashboard say so and how many more people it takes, and the dashboard gives no ETA.

A unit is what nobody gets twice: a task (its pairs), or a work item where repeats are allowed and for
conversations. For each unit still open, the people who could still be served it are those who may work on the
batch less those who already had it; what they cannot cover is left to people not there yet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Sum, Value
from django.db.models.functions import Greatest

from annotate.models import Assignment, Batch, Session, User, WorkItem
from annotate.queue.items import belongs_to_a_batch


@dataclass(frozen=True)
class Capacity:
    people_per_unit: int  # different people each task (or conversation) needs
    unit: str  # "task" or "conversation"
    annotators: int  # people who may be served the batch now
    more_needed: int  # more people it takes to finish the batch (0: those there can finish it)
    unservable: int  # sessions (or ratings) left that none of them can be served

    @property
    def short(self) -> bool:
        return self.more_needed > 0

    def as_dict(self) -> dict[str, int | str | bool]:
        return {**asdict(self), "short": self.short}

    def sentence(self) -> str:
        """In English, for the import report and the command line (the pages translate their own)."""
        if not self.short:
            return (f"Capacity: each {self.unit} needs {self.people_per_unit} different people; "
                    f"{self.annotators} may work on this batch, enough to finish it.")
        return (f"Capacity: each {self.unit} needs {self.people_per_unit} different people (nobody is served a "
                f"{self.unit} twice), but only {self.annotators} may work on this batch: {self.more_needed} more "
                f"are needed to finish it.")


def people_per_unit(*, kind: str, models: int, overlap: int, repeats: bool) -> int:
    if kind != Batch.Kind.INTERFEEDBACK or repeats:
        return overlap
    return models * overlap


def _unit(kind: str) -> str:
    return "task" if kind == Batch.Kind.INTERFEEDBACK else "conversation"


def annotator_pool(batch: Batch | None, *, named: list[User] | None = None,
                   open_to_all: bool | None = None) -> QuerySet[User]:
    """Who may be served the batch: its named annotators (``named`` overrides the batch's, [] for everyone), or
    every annotator account not bound to another batch by an invite link nor named on another open batch (unless
    the batch is open to all annotators; ``open_to_all`` overrides the batch's); its invited participants either
    way."""
    people = User.objects.filter(is_active=True, role=User.Role.ANNOTATOR, is_superuser=False)
    own = Q(crowd_batch=batch) if batch is not None and batch.pk else Q(pk__in=[])
    if named is None:
        named = list(batch.annotators.all()) if batch is not None and batch.pk and batch.annotators_named else []
    if named:
        return people.filter(Q(pk__in=[u.pk for u in named]) | own)
    free: Q = Q(crowd_batch__isnull=True)
    if open_to_all is None:  # as the batch says (a new batch: off)
        open_to_all = batch is not None and batch.open_to_all_annotators
    if not open_to_all:  # the people of another open batch are not served it
        free = free & Q(~Exists(belongs_to_a_batch(OuterRef("pk"))))
    return people.filter(free | own)


def capacity_planned(*, kind: str, models: int, overlap: int, repeats: bool, annotators: int) -> Capacity | None:
    """Before anything is served (an import, its dry run): the people a unit needs against those there.
    None when nothing will be served (an InterFeedback batch without models)."""
    if kind == Batch.Kind.INTERFEEDBACK and not models:
        return None
    needed = people_per_unit(kind=kind, models=models, overlap=overlap, repeats=repeats)
    more = max(0, needed - annotators)
    return Capacity(needed, _unit(kind), annotators, more, 0)


def batch_capacity(batch: Batch) -> Capacity | None:
    """The batch as it stands: its open units against the people who may still be served each."""
    models = len(batch.serving_models) if batch.kind == Batch.Kind.INTERFEEDBACK else 0  # the batch's models
    planned = capacity_planned(kind=batch.kind, models=models, overlap=batch.overlap,
                               repeats=batch.allow_repeat_tasks, annotators=annotator_pool(batch).count())
    if planned is None:
        return None
    if not planned.short:
        # Nobody who may work on it had a unit more than once, and every one of them who had it holds a slot of it
        # or gave it up (a skip, a lease that ran out): with that many spare people no unit can fall short.
        given_up = Assignment.objects.filter(work_item__batch=batch, work_item__is_check=False, status__in=[
            Assignment.Status.SKIPPED, Assignment.Status.EXPIRED]).count()
        if planned.annotators >= planned.people_per_unit + given_up:
            return planned
    more, unservable = _shortfall(batch, planned.annotators)
    return Capacity(planned.people_per_unit, planned.unit, planned.annotators, more, unservable)


def _shortfall(batch: Batch, annotators: int) -> tuple[int, int]:
    """(more people needed, slots nobody there can be served), unit by unit (two grouped queries)."""
    open_slots = Greatest(Value(batch.overlap) - F("completed_count") - F("active_count"), Value(0))
    items = WorkItem.objects.filter(batch=batch, is_check=False)  # checks are outside the overlap
    pool = annotator_pool(batch).values("pk")
    by_task = batch.kind == Batch.Kind.INTERFEEDBACK and not batch.allow_repeat_tasks
    seen: Iterable[tuple[int, int]]  # (unit: a task or an item, people who had it)
    if by_task:
        left = dict(items.values_list("task_id").annotate(left=Sum(open_slots)).order_by())
        seen = Session.objects.filter(batch=batch, annotator__in=pool).values_list("task_id").annotate(
            n=Count("annotator", distinct=True)).order_by()
    else:
        left = dict(items.annotate(left=open_slots).values_list("id", "left"))
        seen = Assignment.objects.filter(work_item__batch=batch, annotator__in=pool).values_list(
            "work_item_id").annotate(n=Count("id")).order_by()
    had: defaultdict[int, int] = defaultdict(int, seen)
    short = [max(0, slots - max(0, annotators - had[unit])) for unit, slots in left.items() if slots]
    return max(short, default=0), sum(short)
