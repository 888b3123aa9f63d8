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

from annotate.assignments import assignment_current
from annotate.crowd import services as crowd
from annotate.errors import ApplicationError
from annotate.queue.services import nothing_to_serve, open_items_count
from annotate.server.markdown import markdown_to_html
from annotate.shares import participant_share

PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"


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
    (completed items; skips only where the batch counts them), else what is left."""
    user = request.user
    batch = user.crowd_batch
    if batch is None:
        return render(request, "annotate/done.html", {"not_invited": True}, status=404)
    share = participant_share(user, batch)
    current = assignment_current(annotator=user)
    open_to_them = open_items_count(annotator=user)
    # Nothing open to them: nothing more will come, or others hold what is left for now.
    empty = nothing_to_serve(annotator=user) if current is None and not open_to_them else None
    nothing_left = empty is not None and empty.state == "done"
    finished = share is not None and current is None and share.done(nothing_left=nothing_left)
    code = batch.completion_code if finished else ""
    return render(request, "annotate/done.html", {
        "batch": batch,
        "share": share,
        "finished": finished,
        "remaining": open_to_them,  # capped by what their share has left
        "no_more": nothing_left and not finished,  # and the share not done: say so rather than "continue"
        "retry_after": empty.retry_after if empty is not None and not finished else None,
        "current": current,
        "code": code,
        "prolific_url": PROLIFIC_COMPLETE_URL.format(code=code) if code and "crowd_prolific" in request.session
        else "",
    })
