"""Attention checks: the work items of a batch's gold tasks (``WorkItem.is_check``), planned for each person.

Why planned and not kept at a running rate: a rate applied item by item ("a check once rate x items are due")
reaches nobody whose share is shorter than 1/rate items, and with the usual rates (0.1-0.3) and shares (3-10)
most participants would never meet one. So each person's checks are placed when they start:

- a participant with a share of S items meets ``max(1, round(rate * S))`` checks, at positions of their sequence
  drawn from the batch's seed and their id, never the first item (a check must not be the first thing they see);
- anyone else (annotators with an account, participants with no set share) meets one check in every block of
  ``round(1 / rate)`` items, at a drawn place within the block (never the very first item).

Positions count the items served to the person in the batch (`Assignment.position`). A check that could not be
served at its place (none left that the person has not met) is served at the next item that can have one.
Checks are outside the overlap: any number of people meet the same gold item, never one person twice, and their
sessions stay out of the study's tables (they are scored for the quality page and the participants table).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from annotate.models import Assignment, Batch, Task, User


def check_count(*, rate: float, share: int) -> int:
    """How many checks a share of ``share`` items plans: at least one whenever the rate is above 0."""
    return max(1, round(rate * share)) if rate > 0 and share > 0 else 0


def block_size(rate: float) -> int:
    """Items per check for people without a share: one check in every block of this many items."""
    return max(1, round(1 / rate))


def _rng(seed: int, annotator_id: int, salt: str) -> random.Random:
    return random.Random(f"{seed}:{annotator_id}:checks:{salt}")


def planned_positions(*, seed: int, annotator_id: int, rate: float, share: int | None, up_to: int) -> list[int]:
    """The positions (1-based, in the person's sequence of the batch) where a check is planned, up to ``up_to``.
    The same seed, person, rate and share always give the same plan."""
    if rate <= 0 or up_to < 1:
        return []
    if share:
        places = list(range(2, share + 1))  # never the first item
        chosen = _rng(seed, annotator_id, "share").sample(places, min(len(places), check_count(rate=rate, share=share)))
        return sorted(p for p in chosen if p <= up_to)
    size = block_size(rate)
    plan = []
    for block in range((up_to - 1) // size + 1):
        first = block * size + 1
        places = [p for p in range(first, first + size) if p >= 2 or size == 1]
        if places:
            plan.append(_rng(seed, annotator_id, str(block)).choice(places))
    return [p for p in plan if p <= up_to]


def share_of(annotator: User, batch: Batch) -> int | None:
    """The set share that plans a person's checks: an invited participant's, when the batch sets one."""
    return batch.items_per_participant or None if annotator.crowd_batch_id == batch.pk else None


def check_due(annotator: User, batch: Batch, position: int) -> bool:
    """Is the person's item at ``position`` (of the batch) to be a check? True while fewer checks have been served
    to them (skipped ones count; those whose lease ran out do not) than their plan places up to that position."""
    if batch.gold_rate <= 0:
        return False
    plan = planned_positions(seed=batch.serving_seed, annotator_id=annotator.pk, rate=batch.gold_rate,
                             share=share_of(annotator, batch), up_to=position)
    if not plan:
        return False
    served = (Assignment.objects.filter(annotator=annotator, work_item__batch_id=batch.pk, work_item__is_check=True)
              .exclude(status=Assignment.Status.EXPIRED).count())
    return served < len(plan)


@dataclass(frozen=True)
class CheckSupply:
    """Whether a batch's gold items and attention rate give everyone the checks planned for them."""

    gold_items: int  # gold tasks (a person meets each at most once)
    per_person: int  # checks planned for a participant with the batch's share (0: none planned)
    missing: int  # of those, how many a participant cannot be given
    unserved_gold: bool  # gold items with no attention rate: never served

    def as_dict(self) -> dict[str, Any]:
        return {"gold_items": self.gold_items, "per_participant": self.per_person,
                "missing_per_participant": self.missing, "gold_items_unserved": self.unserved_gold,
                "warnings": self.sentences()}

    def sentences(self) -> list[str]:
        """What is wrong, in English, for the import report, the API and the command line (the page translates)."""
        out = []
        if self.unserved_gold:
            out.append(f"{self.gold_items} gold items will never be served: the attention rate is 0. Set a rate "
                       f"to use them as attention checks.")
        if self.missing:
            out.append(f"Attention checks: each participant should meet {self.per_person}, but only "
                       f"{self.per_person - self.missing} can be given: {self.missing} missing per participant. "
                       + ("Import more gold items (nobody meets the same one twice)." if self.gold_items
                          < self.per_person else "A share of one item leaves no place for a check after the first."))
        return out


def check_supply(*, rate: float, share: int | None, gold_items: int) -> CheckSupply:
    """The checks a participant is planned against those the batch can give them: distinct gold items, and
    places after the first item of their share. Without a share, one check is planned per block of items."""
    if rate <= 0:
        return CheckSupply(gold_items, 0, 0, unserved_gold=gold_items > 0)
    per_person = check_count(rate=rate, share=share) if share else 1
    places = share - 1 if share else per_person
    can_give = min(per_person, gold_items, places)
    return CheckSupply(gold_items, per_person, per_person - can_give, unserved_gold=False)


def batch_check_supply(batch: Batch) -> CheckSupply:
    gold = Task.objects.filter(batch=batch, is_gold=True).count()
    return check_supply(rate=batch.gold_rate, share=batch.items_per_participant or None, gold_items=gold)
