"""Reads of FIRE (and preference) conversations, with the permission checks that go with them.

Annotators see only conversations assigned to them; researchers read the conversations of batches they are
members of; admins read everything. Anyone else gets "not found" (no id probing).
"""

from __future__ import annotations

import re
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.urls import reverse

from annotate.errors import NotFound, PermissionDenied
from annotate.models import Assignment, Batch, Conversation, Ranking, Rating, Turn, User
from annotate.wording import phrase, phrase_in

# FIRE's criteria (appendix A), shown on the rating page next to the 1-5 controls. English in the API (and as the
# paper names them); the page shows them in the reader's language (annotate.wording).
CRITERIA = {
    "response": [
        (phrase_in("rating criterion", "Improvement"),
         phrase("Does the response take the previous feedback into account and get better?")),
        (phrase_in("rating criterion", "Correctness"),
         phrase("Is the reasoning and the final answer right for the question and the image?")),
        (phrase_in("rating criterion", "Relevance"), phrase("Does it stay on the question, without unrelated content?")),
        (phrase_in("rating criterion", "Completeness"), phrase("Does it give a full thought and a clear final answer?")),
    ],
    "feedback": [
        (phrase_in("rating criterion", "Correctness"),
         phrase("Does it identify the errors in the student's response accurately?")),
        (phrase_in("rating criterion", "Relevance"), phrase("Is it about this question and this response?")),
        (phrase_in("rating criterion", "Clarity"), phrase("Is it easy to understand and to act on?")),
        (phrase_in("rating criterion", "Constructiveness"),
         phrase("Does it guide the student toward the answer without simply giving it away?")),
    ],
    "candidate": [
        (phrase_in("rating criterion", "Helpfulness"), phrase("Does the response answer the question usefully?")),
        (phrase_in("rating criterion", "Faithfulness"),
         phrase("Is everything it says true of the image (no hallucination)?")),
        (phrase_in("rating criterion", "Ethics"), phrase("Is it safe, fair and free of harmful content?")),
    ],
}
SCALE = [(1, phrase_in("rating scale", "Very poor")), (2, phrase_in("rating scale", "Poor")),
         (3, phrase_in("rating scale", "Acceptable")), (4, phrase_in("rating scale", "Good")),
         (5, phrase_in("rating scale", "Excellent"))]
PREFERENCE_DIMENSIONS = ("helpfulness", "faithfulness", "ethics")
# Each preference dimension's name, as its criterion above.
DIMENSION_NAMES = {"helpfulness": CRITERIA["candidate"][0][0], "faithfulness": CRITERIA["candidate"][1][0],
                   "ethics": CRITERIA["candidate"][2][0]}

_PARTS = {
    "student": re.compile(r"^\s*Thought:\s*(?P<a>.*?)\s*Answer:\s*(?P<b>.*?)\s*$", re.S),
    "teacher": re.compile(r"^\s*Score:\s*(?P<a>.*?)\s*Feedback:\s*(?P<b>.*?)\s*$", re.S),
}
_LABELS = {"student": (phrase_in("FIRE turn part", "Thought"), phrase_in("FIRE turn part", "Answer")),
           "teacher": (phrase_in("FIRE turn part", "Score"), phrase_in("FIRE turn part", "Feedback"))}


def turn_parts(role: str, text: str) -> list[dict[str, str]]:
    """Split a FIRE turn into its labelled parts ("Thought"/"Answer", "Score"/"Feedback"); else one part."""
    pattern = _PARTS.get(role)
    match = pattern.match(text) if pattern else None
    if not match:
        return [{"label": "", "text": text.strip()}]
    first, second = _LABELS[role]
    score = match["a"].rstrip(".") if role == "teacher" else match["a"]
    return [{"label": first, "text": score}, {"label": second, "text": match["b"]}]


def _conversation_queryset() -> QuerySet[Conversation]:
    return Conversation.objects.select_related("batch", "image").prefetch_related(
        Prefetch("turns", queryset=Turn.objects.order_by("index"))
    )


def _assignment(user: User, conversation_id: int) -> Assignment | None:
    return (
        Assignment.objects.filter(annotator=user, work_item__conversation_id=conversation_id)
        .order_by("-created_at")
        .first()
    )


def _may_read(user: User, conversation: Conversation) -> bool:
    if user.is_admin_role:
        return True
    return user.is_researcher_role and conversation.batch.members.filter(pk=user.pk).exists()


def access_conversation(user: User, conversation_id: int) -> tuple[Conversation, Assignment | None]:
    """A conversation the user may see, with the user's own assignment of it (None for a reader)."""
    conversation = _conversation_queryset().filter(pk=conversation_id).first()
    if conversation is not None:
        assignment = _assignment(user, conversation_id)
        if assignment is not None or _may_read(user, conversation):
            return conversation, assignment
    raise NotFound(f"Conversation {conversation_id} does not exist or is not assigned to you.")


def conversation_for_rating(user: User, conversation_id: int) -> tuple[Conversation, Assignment]:
    """The annotator's own assigned conversation, for saving ratings: readers who are not assigned get 403."""
    conversation, assignment = access_conversation(user, conversation_id)
    if assignment is None:
        raise PermissionDenied("Only the annotator this conversation is assigned to can rate it.")
    return conversation, assignment


def _own_ratings(conversation: Conversation, annotator: User) -> dict[int, Rating]:
    ratings = Rating.objects.filter(turn__conversation=conversation, annotator=annotator).select_related("turn")
    return {r.turn.index: r for r in ratings}


def conversation_payload(conversation: Conversation, *, viewer: User, assignment: Assignment | None) -> dict[str, Any]:
    """Everything the rating page and the API show. Annotators get their own ratings only."""
    own = _own_ratings(conversation, viewer) if assignment is not None else {}
    is_preference = conversation.batch.kind == Batch.Kind.PREFERENCE
    submitted = any(r.is_final for r in own.values())
    turns = []
    for turn in conversation.turns.all():
        rating = own.get(turn.index)
        entry: dict[str, Any] = {
            "index": turn.index,
            "number": turn.index + 1,  # what the page shows and the reports call the turn
            "role": turn.role,
            "kind": turn.kind,
            "text": turn.text,
            "parts": turn_parts(turn.role, turn.text),
            "is_rateable": turn.is_rateable,
        }
        if turn.is_rateable:
            entry["rating"] = _rating_payload(rating, is_preference)
        turns.append(entry)
    payload: dict[str, Any] = {
        "id": conversation.id,
        "external_id": conversation.external_id,
        "batch": {"name": conversation.batch.name, "kind": conversation.batch.kind},
        "image": reverse("conversation-image", args=[conversation.id]) if conversation.image_id else None,
        "question": conversation.question,
        "ground_truth": conversation.ground_truth,
        "source": conversation.source,
        "split": conversation.split,
        "turns": turns,
        "can_rate": assignment is not None and not submitted,
        "submitted": submitted,
        "criteria": _criteria(is_preference),
        "scale": [{"value": v, "label": label} for v, label in SCALE],
    }
    if is_preference:
        ranking = Ranking.objects.filter(conversation=conversation, annotator=viewer).first() if assignment else None
        payload["ranking"] = ranking.ranking if ranking else ""
        payload["reasons_required"] = conversation.batch.reasons_required
        if assignment is None:  # a researcher (or admin) reading the item: every rater's judgments, and the models
            payload["judgments"] = preference_judgments(conversation)
            payload["models"] = candidate_models(conversation)
    return payload


def candidate_models(conversation: Conversation) -> list[str] | None:
    """The model behind each candidate, in order, when the record named them (never shown to raters)."""
    named = (conversation.metadata or {}).get("models")
    return named if isinstance(named, list) else None


def preference_judgments(conversation: Conversation) -> list[dict[str, Any]]:
    """Every rater's judgments of a preference item, for researchers: per rater (by pseudonym) the ranking, whether
    it is final, and each candidate's three scores and reason. Two queries."""
    candidates = {t.index: n for n, t in enumerate((t for t in conversation.turns.all() if t.is_rateable), 1)}
    raters: dict[int, dict[str, Any]] = {}

    def rater(annotator_id: int, pseudonym: str) -> dict[str, Any]:
        return raters.setdefault(annotator_id, {"rater": pseudonym, "ranking": "", "final": False, "scores": []})

    for r in (Rating.objects.filter(turn__conversation=conversation).select_related("annotator", "turn")
              .order_by("annotator__pseudonym", "turn__index")):
        if r.turn.index not in candidates:
            continue
        entry = rater(r.annotator_id, r.annotator.pseudonym)
        entry["final"] = entry["final"] or r.is_final
        entry["scores"].append({"candidate": candidates[r.turn.index], "turn": r.turn.index,
                                **{d: getattr(r, d) for d in PREFERENCE_DIMENSIONS}, "reason": r.comment})
    for ranking in Ranking.objects.filter(conversation=conversation).select_related("annotator"):
        entry = rater(ranking.annotator_id, ranking.annotator.pseudonym)
        entry["ranking"], entry["final"] = ranking.ranking, entry["final"] or ranking.is_final
    return sorted(raters.values(), key=lambda entry: entry["rater"])


def _rating_payload(rating: Rating | None, is_preference: bool) -> dict[str, Any]:
    if is_preference:
        values = {d: getattr(rating, d) if rating else None for d in PREFERENCE_DIMENSIONS}
        return {**values, "comment": rating.comment if rating else ""}
    return {"score": rating.score if rating else None, "comment": rating.comment if rating else ""}


def _criteria(is_preference: bool) -> dict[str, list[dict[str, str]]]:
    keys = ("candidate",) if is_preference else ("response", "feedback")
    return {key: [{"name": n, "help": h} for n, h in CRITERIA[key]] for key in keys}


