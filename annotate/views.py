"""Server-rendered pages. They call selectors and services only."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotate.errors import NotFound
from annotate.models import ImageBlob, Session, Task
from annotate.selectors.conversations import assignment_page_url
from annotate.selectors.sessions import access_session, annotator_progress, session_snapshot
from annotate.services.queue import assignment_current, assignment_next, open_items_count


@login_required
def home(request):
    if request.user.is_researcher_role and not request.GET.get("annotate"):
        return redirect("researcher-home")
    current = assignment_current(annotator=request.user)
    recent = (
        Session.objects.filter(annotator=request.user)
        .select_related("task", "model_config")
        .order_by("-started_at")[:20]
    )
    return render(
        request,
        "annotate/home.html",
        {"progress": {**annotator_progress(request.user), "remaining": open_items_count(annotator=request.user)},
         "current": current, "recent": recent},
    )


@login_required
@require_POST
def next_item(request):
    assignment = assignment_next(annotator=request.user)
    if assignment is None:
        messages.info(request, "Nothing left to annotate right now. Thank you!")
        return redirect("home")
    return redirect(assignment_page_url(assignment))  # a session page, or the FIRE rating page


@login_required
def session_page(request, session_id: int):
    try:
        session = access_session(request.user, session_id)
    except NotFound:
        raise Http404("Session not found") from None
    return render(
        request,
        "annotate/session.html",
        {"session": session, "snapshot": session_snapshot(session),
         "can_act": session.annotator_id == request.user.id},
    )


@login_required
def task_image(request, sha256: str):
    """Task images are served only to people who may see a task showing them."""
    blob = ImageBlob.objects.filter(sha256=sha256).first()
    if blob is None:
        raise Http404("Image not found")
    user = request.user
    tasks = Task.objects.filter(task_images__blob=blob)
    allowed = user.is_admin_role or Session.objects.filter(annotator=user, task__in=tasks).exists() or (
        user.is_researcher_role and tasks.filter(batch__members=user).exists()
    )
    if not allowed:
        raise Http404("Image not found")
    response = FileResponse(blob.file.open("rb"), content_type=blob.mime)
    response["Cache-Control"] = "private, max-age=3600"
    return response
