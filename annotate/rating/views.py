"""The FIRE rating page (and its preference variant), its skip form and the conversation image. Selectors and
services only.

The page works without JavaScript (the form posts here and the final save runs; the skip form posts to
``fire_skip``); with JavaScript it autosaves drafts through the API and is usable with the keyboard only
(keys 1-5, Tab, arrows, Ctrl+Enter; Enter in the skip reason skips).
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404
from django.shortcuts import redirect, render
from django.utils.translation import gettext, gettext_lazy, pgettext_lazy
from django.views.decorators.http import require_POST

from annotate.errors import ApplicationError
from annotate.models import Batch
from annotate.people.access import signed_in
from annotate.queue.selectors import assignment_page_url
from annotate.queue.services import assignment_next
from annotate.queue.views import home_saying_why_nothing
from annotate.rating.apis import viewer_payload
from annotate.rating.fire.services import ratings_save
from annotate.rating.preference.services import preference_save, ranking_from_positions, ranking_parse
from annotate.rating.selectors import DIMENSION_NAMES, PREFERENCE_DIMENSIONS, access_conversation
from annotate.rating.services import MAX_SKIP_REASON_CHARS, conversation_skip
from annotate.server.markdown import markdown_to_html
from annotate.wording import shown

ROLE_LABELS = {"student": gettext_lazy("Student"), "teacher": gettext_lazy("Teacher"),
               "model": gettext_lazy("Candidate")}
RATE_THIS = {"response": gettext_lazy("Rate this response"), "feedback": gettext_lazy("Rate this feedback"),
             "candidate": gettext_lazy("Rate this candidate")}
KIND_LABELS = {"response": pgettext_lazy("FIRE turn kind", "response"),
               "feedback": pgettext_lazy("FIRE turn kind", "feedback"),
               "candidate": pgettext_lazy("FIRE turn kind", "candidate")}


def _shown_labels(payload: dict) -> None:
    """The criteria, the scale and the turns' part labels in the reader's language (the API keeps English)."""
    payload["criteria"] = {key: [{"name": shown(c["name"]), "help": shown(c["help"])} for c in criteria]
                           for key, criteria in payload["criteria"].items()}
    payload["scale"] = [{**s, "label": shown(s["label"])} for s in payload["scale"]]
    for turn in payload["turns"]:
        turn["parts"] = [{**part, "label": shown(part["label"])} for part in turn["parts"]]


def _controls(payload: dict) -> None:
    """Decorate each rateable turn with the 1-5 controls it shows (one for FIRE, three for preference)."""
    _shown_labels(payload)
    candidate = 0
    for turn in payload["turns"]:
        turn["role_label"] = ROLE_LABELS.get(turn["role"], turn["role"])
        turn["kind_label"] = KIND_LABELS.get(turn["kind"], turn["kind"])
        if not turn["is_rateable"]:
            continue
        rating = turn["rating"]
        if turn["kind"] == "candidate":
            candidate += 1
            turn["candidate_number"] = candidate
            if payload.get("models") and len(payload["models"]) >= candidate:  # researchers only
                turn["model"] = payload["models"][candidate - 1]
            dims = [(d, shown(DIMENSION_NAMES[d])) for d in PREFERENCE_DIMENSIONS]
        else:
            dims = [("score", RATE_THIS.get(turn["kind"], turn["kind"]))]
        turn["controls"] = [
            {"dim": dim, "label": label, "value": rating.get(dim),
             "options": [{"value": s["value"], "label": s["label"]} for s in payload["scale"]]}
            for dim, label in dims
        ]


def _rank_controls(payload: dict) -> list[dict]:
    """Preference items: one place control per candidate (1 = best; equal places tie), set from the saved ranking
    (a draft that does not parse leaves them empty)."""
    candidates = [turn for turn in payload["turns"] if turn.get("candidate_number")]
    try:
        groups = ranking_parse(payload["ranking"], len(candidates)) if payload["ranking"] else []
    except ApplicationError:
        groups = []
    place = {number: level for level, group in enumerate(groups, 1) for number in group}
    return [{"index": turn["index"], "number": turn["candidate_number"], "place": place.get(turn["candidate_number"]),
             "places": list(range(1, len(candidates) + 1))} for turn in candidates]


def _page(request, conversation, assignment, *, error: str = "", skip_error: str = "", skip_reason: str = "",
          status: int = 200):
    payload = viewer_payload(conversation, request.user, assignment)
    _controls(payload)
    is_preference = "ranking" in payload
    context = {"conversation": conversation, "payload": payload, "is_preference": is_preference,
               "ranks": _rank_controls(payload) if is_preference else [],
               "client_request_id": uuid.uuid4().hex, "error": error, "skip_error": skip_error,
               "skip_reason": skip_reason, "skip_max_chars": MAX_SKIP_REASON_CHARS,
               "instructions_html": markdown_to_html(conversation.batch.instructions),
               "instructions_batch_id": conversation.batch_id}
    return render(request, "annotate/fire_rate.html", context, status=status)


@signed_in
def fire_rate_page(request, conversation_id: int):
    conversation, assignment = access_conversation(request.user, conversation_id)
    if request.method == "POST":
        if assignment is None:
            raise PermissionDenied(gettext("Only the annotator this conversation is assigned to can rate it."))
        try:
            _save_form(request, conversation, final=True)
        except ApplicationError as error:
            return _page(request, conversation, assignment, error=error.message, status=error.http_status)
        # Without JavaScript: back home, where "Start next item" continues.
        messages.success(request, gettext("Your ratings were saved."))
        return redirect("home")
    return _page(request, conversation, assignment)


@signed_in
@require_POST
def fire_skip(request, conversation_id: int):
    """Skip with a reason (the page's skip form without JavaScript), then straight to the next item."""
    conversation, assignment = access_conversation(request.user, conversation_id)
    if assignment is None:
        raise PermissionDenied(gettext("Only the annotator this conversation is assigned to can skip it."))
    reason = request.POST.get("reason", "")
    try:
        conversation_skip(annotator=request.user, conversation_id=conversation.id, reason=reason)
    except ApplicationError as error:
        # A missing reason shows at the reason; anything else (e.g. already submitted: no skip form) on the page.
        where = "skip_error" if error.http_status == 400 else "error"
        return _page(request, conversation, assignment, skip_reason=reason, status=error.http_status,
                     **{where: error.message})
    messages.info(request, gettext("Skipped: the conversation goes to another annotator."))
    following = assignment_next(annotator=request.user)
    if following is None:
        return home_saying_why_nothing(request)
    return redirect(assignment_page_url(following))


def _int_or_none(value: str | None) -> int | None:
    return int(value) if value and value.strip().isdigit() else None


def _save_form(request, conversation, *, final: bool) -> None:
    post = request.POST
    indices = [t.index for t in conversation.turns.all() if t.is_rateable]
    crid = (post.get("client_request_id") or "")[:64]
    if conversation.batch.kind == Batch.Kind.PREFERENCE:
        ratings = {
            i: {**{d: _int_or_none(post.get(f"{d}-{i}")) for d in PREFERENCE_DIMENSIONS},
                "reason": post.get(f"comment-{i}", "")}
            for i in indices
        }
        # The ranking control posts each candidate's place (rank-<turn index>: 1 = best, equal places tie); a place
        # missing leaves the ranking empty (never an older draft's).
        if any(f"rank-{i}" in post for i in indices):
            places = {number: _int_or_none(post.get(f"rank-{i}")) for number, i in enumerate(indices, 1)}
            ranking = ranking_from_positions(places, len(indices))
        else:
            ranking = post.get("ranking", "")
        preference_save(annotator=request.user, conversation_id=conversation.id, ratings=ratings,
                        ranking=ranking, client_request_id=crid, final=final)
    else:
        scores = {i: (_int_or_none(post.get(f"score-{i}")), post.get(f"comment-{i}", "")) for i in indices}
        ratings_save(annotator=request.user, conversation_id=conversation.id, scores=scores,
                     client_request_id=crid, final=final)


@signed_in
def conversation_image(request, conversation_id: int):
    """A conversation's image, only for people who may see the conversation."""
    conversation, _ = access_conversation(request.user, conversation_id)
    if conversation.image is None:
        raise Http404("This conversation has no image")
    response = FileResponse(conversation.image.file.open("rb"), content_type=conversation.image.mime)
    response["Cache-Control"] = "private, max-age=3600"
    return response
