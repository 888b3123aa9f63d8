"""Researcher page: a batch's participants table, the decisions (one row at a time, or the suggestions for every
undecided participant), returns from the platform's list, and the downloads a crowd platform takes."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_POST

from annotate.crowd.study import study_of
from annotate.errors import ApplicationError
from annotate.people.access import batch_for_researcher, researcher_required
from evaluation.participants.selectors import participants_table
from evaluation.participants.services import (
    participants_decide,
    participants_mark_returned,
    suggestions_accept,
)

DOWNLOADS = (("participants", "csv"), ("participants", "json"), ("surveys", "csv"), ("surveys", "json"),
             ("approvals", "txt"), ("bonuses", "csv"))


@researcher_required
def participants_page(request, batch_id: int):
    batch = batch_for_researcher(request.user, batch_id)
    rows = participants_table(batch)
    return render(request, "evaluation/participants.html", {
        "batch": batch, "rows": rows, "study": study_of(batch), "downloads": DOWNLOADS,
        "undecided_with_suggestion": sum(1 for row in rows if row.decision is None and row.suggestion),
    })


@researcher_required
@require_POST
def participants_decide_page(request, batch_id: int):
    """One participant's decision (the row's form), or the suggestions for every undecided participant."""
    batch = batch_for_researcher(request.user, batch_id)
    try:
        if request.POST.get("action") == "accept-suggestions":
            count = suggestions_accept(batch=batch, by=request.user)
            messages.success(request, ngettext("%(n)s decision recorded from the suggestions.",
                                               "%(n)s decisions recorded from the suggestions.", count) % {"n": count})
        elif request.POST.get("action") == "returned":
            ids = request.POST.get("ids", "").replace(",", "\n").split()
            count = participants_mark_returned(batch=batch, ids=ids, by=request.user)
            messages.success(request, ngettext("%(n)s participant marked as returned: their items are free again.",
                                               "%(n)s participants marked as returned: their items are free again.",
                                               count) % {"n": count})
        else:
            participants_decide(batch=batch, by=request.user, decisions=[(
                request.POST.get("participant", ""), request.POST.get("decision", ""), request.POST.get("reason", ""))])
            messages.success(request, gettext("Decision recorded."))
    except ApplicationError as error:
        messages.error(request, error.message)
    return redirect("research-participants", batch.pk)
