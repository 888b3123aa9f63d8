"""Reads of annotate's data for researchers: plain rows for metrics.py."""

from __future__ import annotations

from django.db.models import Count, Q

from annotate.models import Batch, Session


def batches_for_researcher(user):
    batches = Batch.objects.all() if user.is_admin_role else Batch.objects.filter(members=user)
    return batches.annotate(
        sessions_completed=Count("sessions", filter=Q(sessions__status=Session.Status.COMPLETED)),
    ).order_by("-created_at")
