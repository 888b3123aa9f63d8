"""Assignment leases: an annotator's hold on one work item, renewed by the page's heartbeat, finished by
completing or skipping the item, returned to the pool when it expires. Every kind of work uses them; the
next-item queue (annotate.queue) makes them."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from annotate.models import Assignment, Session, User, WorkItem


def lease_end() -> datetime:
    return timezone.now() + timedelta(seconds=settings.ASSIGNMENT_LEASE_SECONDS)


def assignments_expire(*, now: datetime | None = None) -> int:
    """Return expired leases to the pool. Sessions already under way stay with their annotator."""
    now = now or timezone.now()
    expiring = Assignment.objects.filter(status=Assignment.Status.ACTIVE, lease_expires_at__lt=now)
    if not expiring.exists():  # the usual case on the next-item path: one indexed probe, no transaction
        return 0
    return _expire(expiring, now)


def assignments_release(*, annotator: User) -> int:
    """Free at once every item the annotator holds, lease or not (a participant who returned a study or ran out of
    its time): the items go back to the pool for others, their sessions are abandoned."""
    return _expire(Assignment.objects.filter(annotator=annotator, status=Assignment.Status.ACTIVE), timezone.now(),
                   skip_locked=False)  # waits for a request of theirs under way rather than miss its item


def _expire(assignments: QuerySet[Assignment], now: datetime, *, skip_locked: bool = True) -> int:
    with transaction.atomic():
        expired = list(assignments.select_for_update(skip_locked=skip_locked).values_list("id", "work_item_id"))
        if not expired:
            return 0
        Assignment.objects.filter(id__in=[a for a, _ in expired]).update(
            status=Assignment.Status.EXPIRED, finished_at=now
        )
        for _, work_item_id in expired:
            WorkItem.objects.filter(pk=work_item_id, active_count__gt=0).update(active_count=F("active_count") - 1)
        Session.objects.filter(assignment_id__in=[a for a, _ in expired]).exclude(
            status=Session.Status.COMPLETED
        ).update(status=Session.Status.ABANDONED)
    return len(expired)


def assignment_current(*, annotator: User) -> Assignment | None:
    return (
        Assignment.objects.select_related("work_item", "session")
        .filter(annotator=annotator, status=Assignment.Status.ACTIVE, lease_expires_at__gte=timezone.now())
        .order_by("created_at")
        .first()
    )


def assignment_renew(*, assignment: Assignment) -> None:
    Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.ACTIVE).update(
        lease_expires_at=lease_end()
    )


def assignment_complete(*, assignment_id: int) -> None:
    """Count the finished work once: an active lease frees its slot; an expired one still counts."""
    now = timezone.now()
    work_item_id = Assignment.objects.filter(pk=assignment_id).values_list("work_item_id", flat=True).first()
    if work_item_id is None:
        return  # no such assignment: nothing to count
    was_active = Assignment.objects.filter(pk=assignment_id, status=Assignment.Status.ACTIVE).update(
        status=Assignment.Status.COMPLETED, finished_at=now
    )
    if not was_active and not Assignment.objects.filter(pk=assignment_id).exclude(
        status=Assignment.Status.COMPLETED
    ).update(status=Assignment.Status.COMPLETED, finished_at=now):
        return  # already counted
    freed = {"active_count": F("active_count") - 1} if was_active else {}
    WorkItem.objects.filter(pk=work_item_id).update(completed_count=F("completed_count") + 1, **freed)


def assignment_skip(*, assignment: Assignment, reason: str) -> None:
    """The annotator passes on an item; it goes back to the pool for others (never to them again)."""
    from annotate.errors import ApplicationError

    reason = (reason or "").strip()
    if not reason:
        raise ApplicationError(_("Say why you skip this item (e.g. 'image does not load')."), code="skip_reason")
    with transaction.atomic():
        updated = Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.ACTIVE).update(
            status=Assignment.Status.SKIPPED, skip_reason=reason[:300], finished_at=timezone.now()
        )
        if not updated:
            return
        WorkItem.objects.filter(pk=assignment.work_item_id, active_count__gt=0).update(
            active_count=F("active_count") - 1
        )
        Session.objects.filter(assignment_id=assignment.pk).exclude(status=Session.Status.COMPLETED).update(
            status=Session.Status.ABANDONED
        )
