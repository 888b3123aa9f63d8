"""Gold items (Task.is_gold, answers known to the researchers) served at a batch's ``gold_rate`` to each annotator."""

from __future__ import annotations

from django.db.models import Count, Q

from annotate.models import Assignment, Batch, User


def gold_due(*, gold_rate: float, served: int, gold_served: int) -> bool:
    """Is the annotator's next item of a batch due to be gold? Keeps gold at ``gold_rate`` of the items served:
    the n-th item is gold when fewer than floor(rate * n) of the first n would otherwise be (so the first items
    are ordinary ones unless the rate is 1)."""
    return gold_served < int(gold_rate * (served + 1) + 1e-9)


def gold_preference(annotator: User, batch: Batch) -> tuple[Q, Q] | None:
    """(preferred, other): gold items first when one is due for this annotator, ordinary ones first otherwise.
    None, without a query, when the batch has no gold rate."""
    if batch.gold_rate <= 0:
        return None
    counts = (Assignment.objects.filter(annotator=annotator, work_item__batch_id=batch.pk)
              .exclude(status=Assignment.Status.EXPIRED)
              .aggregate(total=Count("id"), gold=Count("id", filter=Q(work_item__task__is_gold=True))))
    is_gold = Q(task__is_gold=True)
    not_gold = Q(task__is_gold=False) | Q(task__isnull=True)  # conversations are never gold
    if gold_due(gold_rate=batch.gold_rate, served=counts["total"], gold_served=counts["gold"]):
        return is_gold, not_gold
    return not_gold, is_gold
