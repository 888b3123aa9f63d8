"""Reads for the next-item queue: a batch by name, the page an assignment opens, a participant's finished share."""

from __future__ import annotations

from django.urls import reverse

from annotate.errors import NotFound
from annotate.models import Assignment, Batch, User
from annotate.queue.items import open_items
from annotate.shares import participant_share


def batch_by_name(name: str) -> Batch | None:
    return Batch.objects.filter(name=name).first()


def batch_named(name: str) -> Batch:
    """The batch a request names; a name no batch has is `NotFound`, saying which."""
    batch = batch_by_name(name)
    if batch is None:
        raise NotFound(f"No batch named {name!r}.")
    return batch


def assignment_page_url(assignment: Assignment) -> str:
    """Where the annotator works on an assignment: the rating page for a conversation, else the session page."""
    item = assignment.work_item
    if item.conversation_id is not None:
        return reverse("fire-rate", args=[item.conversation_id])
    return reverse("session-page", args=[assignment.session.id])


def participant_share_done(user: User) -> bool:
    """An invited participant whose share of their batch is done (the completion code may be shown)."""
    if not user.crowd_batch_id:
        return False
    share = participant_share(user, Batch.objects.get(pk=user.crowd_batch_id))
    if share is None:
        return False
    # Only a participant without a set share is done by running out of items: the query is for them alone.
    return share.done(nothing_left=share.size is None and not open_items(user).exists())
