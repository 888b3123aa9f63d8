"""Server-rendered pages. They call selectors and services only."""

from __future__ import annotations

from django.http import FileResponse, Http404
from django.shortcuts import render
from django.utils.translation import gettext_noop

from annotate.models import ImageBlob, Session, Task
from annotate.people.access import signed_in
from annotate.server.markdown import markdown_to_html
from annotate.sessions.selectors import access_session, item_progress, session_snapshot

# The skip form's choices: a short list the annotator picks with the keyboard (an "Other" box is beside it).
# Stored in English (researchers read them side by side); the page shows each in the annotator's language.
SKIP_REASONS = (
    gettext_noop("The image does not load or cannot be read"),
    gettext_noop("The question or its options look wrong"),
    gettext_noop("I cannot judge this subject"),
)


@signed_in
def session_page(request, session_id: int):
    session = access_session(request.user, session_id)
    return render(
        request,
        "annotate/session.html",
        {"session": session, "snapshot": session_snapshot(session),
         "can_act": session.annotator_id == request.user.id,
         "progress": item_progress(session, request.user), "skip_reasons": SKIP_REASONS,
         "instructions_html": markdown_to_html(session.batch.instructions), "instructions_batch_id": session.batch_id},
    )


@signed_in
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
