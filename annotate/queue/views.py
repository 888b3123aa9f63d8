"""The annotator's home page and the next-item button: pages over the next-item queue."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotate.assignments import assignment_current
from annotate.models import Session
from annotate.participation import items_held_back
from annotate.queue.items import may_be_served
from annotate.queue.selectors import assignment_page_url, participant_share_done
from annotate.queue.services import assignment_next, nothing_to_serve, open_items_count
from annotate.sessions.selectors import annotator_progress
from annotate.shares import participant_share

REMAINING_SHOWN_UP_TO = 1000


@login_required
def home(request):
    user = request.user
    if user.is_researcher_role and not request.GET.get("annotate"):
        return redirect("researcher-home")
    current = assignment_current(annotator=user)
    if current is None and user.crowd_batch_id and items_held_back(user, user.crowd_batch):
        return redirect("crowd-study")  # their study asks something first (consent, screening, ...), or ended
    if current is None and participant_share_done(user):
        return redirect("crowd-done")  # the completion code, at once
    recent = (
        Session.objects.filter(annotator=user)
        .select_related("task", "model_config", "assignment")
        .order_by("-started_at")[:20]
    )
    servable = may_be_served(user)
    # Counted up to a cap (a 100k-item batch would be read whole on every visit), shown as "1000+" beyond it.
    remaining = open_items_count(annotator=user, up_to=REMAINING_SHOWN_UP_TO + 1) if servable else 0
    # Nothing open: say why in place of "Start next item" (a finished share, or items others hold for now).
    empty = nothing_to_serve(annotator=user) if servable and current is None and not remaining else None
    return render(
        request,
        "annotate/home.html",
        {"progress": {**annotator_progress(user),
                      "remaining": f"{REMAINING_SHOWN_UP_TO}+" if remaining > REMAINING_SHOWN_UP_TO else remaining},
         "current": current, "recent": recent, "empty": empty, "servable": servable,
         "share": participant_share(user, user.crowd_batch) if user.crowd_batch_id else None},
    )


@login_required
@require_POST
def next_item(request):
    if not may_be_served(request.user):
        return redirect("home")  # which says that researchers and admins are not served items
    assignment = assignment_next(annotator=request.user)
    if assignment is None:
        return home_saying_why_nothing(request)
    return redirect(assignment_page_url(assignment))  # a session page, or the FIRE rating page


def home_saying_why_nothing(request):
    """Where a person goes when the queue has nothing for them: an invited participant to the completion page
    (their code, at once, when their share is done), anyone else to the home page, which says why (the share is
    finished, or others hold what is left for now)."""
    if request.user.crowd_batch_id:
        return redirect("crowd-done")
    return redirect("home")
