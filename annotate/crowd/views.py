"""Crowdsourcing pages: the invite link (GET shows the study, POST joins and logs in) and the completion page.

Joining is a POST so that link previews and scanners fetching the URL create no accounts. The Prolific
parameters ride along in the query string of both.
"""

from __future__ import annotations

from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from annotate.crowd import selectors as crowd_selectors
from annotate.crowd import services as crowd
from annotate.crowd.flow import FINISHED, ITEMS, participant_where
from annotate.crowd.participant_views import platform_url
from annotate.errors import ApplicationError
from annotate.server.markdown import markdown_to_html


@never_cache
@require_http_methods(["GET", "POST"])
def join(request, token: str):
    try:
        invite = crowd.invite_read(token)
    except ApplicationError as error:
        return render(request, "annotate/join_invalid.html", {"message": error.message}, status=error.http_status)
    pid = request.GET.get("PROLIFIC_PID")
    context = {"batch": invite.batch, "invite": invite, "prolific": pid is not None,
               "query": request.META.get("QUERY_STRING", ""),
               "instructions_html": markdown_to_html(invite.batch.instructions)}
    if request.method == "GET":
        context["returning"] = crowd_selectors.participant_returning(batch=invite.batch, prolific_pid=pid,
                                                                     current_user=request.user)
        return render(request, "annotate/join_start.html", context)
    try:
        user = crowd.participant_for_invite(invite=invite, prolific_pid=pid, current_user=request.user)
    except ApplicationError as error:
        return render(request, "annotate/join_invalid.html", {"message": error.message}, status=error.http_status)
    if request.user.pk != user.pk:
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    if pid is not None:  # kept for the completion page's link back to Prolific; never displayed
        request.session["crowd_prolific"] = {"study_id": request.GET.get("STUDY_ID", "")[:64],
                                             "session_id": request.GET.get("SESSION_ID", "")[:64]}
    return redirect("home")


@never_cache
@login_required
def done(request):
    """The completion page: the code and the link back to the crowd platform once the participant's share is done
    (completed items; skips only where the batch counts them) and their study asks nothing more, else what is left.
    A participant at another step of their study (consent, screening, a questionnaire, an end) is sent there."""
    user = request.user
    batch = user.crowd_batch
    if batch is None:
        return render(request, "annotate/done.html", {"not_invited": True}, status=404)
    where = participant_where(user)
    if where.stage not in (ITEMS, FINISHED):
        return redirect("crowd-study")
    items = where.items
    finished = where.stage == FINISHED
    return render(request, "annotate/done.html", {
        "batch": batch,
        "share": items.share,
        "finished": finished,
        "remaining": items.remaining,  # capped by what their share has left
        "no_more": items.nothing_left and not finished,  # and the share not done: say so rather than "continue"
        "retry_after": items.retry_after,
        "current": items.current,
        "code": where.code,
        "prolific_url": platform_url(request, where.code),
    })
