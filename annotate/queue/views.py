"""The annotator's home page and the next-item button: pages over the next-item queue."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotate.assignments import assignment_current
from annotate.models import Session
from annotate.queue.selectors import assignment_page_url
from annotate.queue.services import assignment_next, nothing_to_serve, open_items_count
from annotate.sessions.selectors import annotator_progress


@login_required
def home(request):
    if request.user.is_researcher_role and not request.GET.get("annotate"):
        return redirect("researcher-home")
    current = assignment_current(annotator=request.user)
    recent = (
        Session.objects.filter(annotator=request.user)
        .select_related("task", "model_config", "assignment")
        .order_by("-started_at")[:20]
    )
    remaining = open_items_count(annotator=request.user)
    # Nothing open: say why in place of "Start next item" (a finished share, or items others hold for now).
    empty = nothing_to_serve(annotator=request.user) if current is None and not remaining else None
    return render(
        request,
        "annotate/home.html",
        {"progress": {**annotator_progress(request.user), "remaining": remaining},
         "current": current, "recent": recent, "empty": empty},
    )


@login_required
@require_POST
def next_item(request):
    assignment = assignment_next(annotator=request.user)
    if assignment is None:
        return home_saying_why_nothing(request)
    return redirect(assignment_page_url(assignment))  # a session page, or the FIRE rating page


def home_saying_why_nothing(request):
    """Back to the home page, which says why the queue had nothing: the share is finished, or others hold what is
    left for now."""
    return redirect("home")
