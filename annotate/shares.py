"""What each person is asked to do in a batch and how far they are: an invited participant's share.

A participant (joined through an invite link) has a share when the batch sets ``items_per_participant``. It is
done when that many of their items are *completed*: a skipped item counts only where the batch says so
(``skips_count_toward_share``, off by default), and then at most ``max_counted_skips`` of them. So a completion
code always stands for finished work. Without a set share, a participant is done when the batch has nothing left
for them, they completed at least one item, and they skipped no more items than may count.

Annotators with an account have no share: the queue serves them while the batch has items for them.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q
from django.utils import timezone

from annotate.models import Assignment, Batch, User


@dataclass(frozen=True)
class Share:
    size: int | None  # None: no set share (whatever the batch has for them)
    completed: int
    skipped: int
    counted_skips: int
    in_progress: int

    @property
    def counted(self) -> int:
        """Items that count toward the share: completed ones and the skips that may count."""
        return self.completed + self.counted_skips

    @property
    def full(self) -> bool:
        """No further item may be served: the counted items and the one under way fill the share."""
        return self.size is not None and self.counted + self.in_progress >= self.size

    @property
    def left(self) -> int | None:
        """Items still to do besides the one under way (None: no set share)."""
        return None if self.size is None else max(0, self.size - self.counted - self.in_progress)

    def done(self, *, nothing_left: bool) -> bool:
        """Finished: the completion code may be shown. ``nothing_left``: the queue has no item left for them."""
        if self.in_progress:
            return False
        if self.size is not None:
            return self.counted >= self.size
        return nothing_left and self.completed >= 1 and self.skipped <= self.counted_skips


def is_participant_of(user: User, batch: Batch) -> bool:
    return user.crowd_batch_id is not None and user.crowd_batch_id == batch.pk


def counted_skips(batch: Batch, skipped: int) -> int:
    return min(skipped, batch.max_counted_skips) if batch.skips_count_toward_share else 0


def participant_share(user: User, batch: Batch) -> Share | None:
    """The share of an invited participant of ``batch`` (one grouped count); None for anyone else."""
    if not is_participant_of(user, batch):
        return None
    status = Assignment.Status
    counts = Assignment.objects.filter(annotator=user, work_item__batch_id=batch.pk).aggregate(
        completed=Count("id", filter=Q(status=status.COMPLETED)),
        skipped=Count("id", filter=Q(status=status.SKIPPED)),
        # a lease that ran out is no longer under way, even before the expiry marks it so
        in_progress=Count("id", filter=Q(status=status.ACTIVE, lease_expires_at__gte=timezone.now())),
    )
    return Share(size=batch.items_per_participant or None, counted_skips=counted_skips(batch, counts["skipped"]),
                 **counts)
