"""Reads for the next-item queue: a batch by name, and the page an assignment opens."""

from __future__ import annotations

from django.urls import reverse

from annotate.models import Assignment, Batch
from annotate.server.prepared import PreparedQuery

_BY_NAME = PreparedQuery(lambda name: Batch.objects.filter(name=name), str)  # on every next-item request


def batch_by_name(name: str) -> Batch | None:
    return _BY_NAME.first(name)


def assignment_page_url(assignment: Assignment) -> str:
    """Where the annotator works on an assignment: the rating page for a conversation, else the session page."""
    item = assignment.work_item
    if item.conversation_id is not None:
        return reverse("fire-rate", args=[item.conversation_id])
    return reverse("session-page", args=[assignment.session.id])
