"""The Prolific panels the invites and participants pages include ({% load prolific %}): each reads its own data,
so those pages' views stay as they are."""

from __future__ import annotations

from django import template
from django.conf import settings

from annotate.crowd.study import study_of
from annotate.prolific import selectors
from annotate.prolific.payments import REJECTION_CATEGORIES
from annotate.prolific.studies import places_needed

register = template.Library()


@register.inclusion_tag("annotate/prolific/invites_panel.html", takes_context=True)
def prolific_invites_panel(context, batch):
    study = selectors.study_for_batch(batch)
    return {"batch": batch, "study": study, "token_env": settings.PROLIFIC_TOKEN_ENV,
            "token_configured": selectors.token_configured(), "crowd": study_of(batch),
            "places_needed": places_needed(batch) if study is None else None,
            "csrf_token": context.get("csrf_token"), "request": context.get("request")}


@register.inclusion_tag("annotate/prolific/participants_panel.html", takes_context=True)
def prolific_participants_panel(context, batch):
    study = selectors.study_for_batch(batch)
    return {"batch": batch, "study": study, "rows": selectors.submission_rows(batch) if study else [],
            "calls": selectors.calls_of(batch, 20) if study else [], "categories": REJECTION_CATEGORIES,
            "csrf_token": context.get("csrf_token")}
