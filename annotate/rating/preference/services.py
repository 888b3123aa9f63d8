"""Writes of MM-RLHF-style preference ratings (batches of kind ``preference``), on the FIRE rating machinery.

Each candidate response gets helpfulness, faithfulness and ethics scores (1-5) with a reason; the conversation gets
a ranking of its candidates with ties, e.g. ``1>2=3`` (candidate numbers start at 1, in the order shown).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from django.db import transaction

from annotate.errors import ApplicationError
from annotate.models import Batch, Ranking, Rating, User
from annotate.rating.services import (
    RatingsSaved,
    already_submitted,
    check_comment,
    check_request_id,
    check_score,
    finish_assignment,
    lock_assignment,
    rateable_turns,
    write_ratings,
)

DIMENSIONS = ("helpfulness", "faithfulness", "ethics")
_RANKING = re.compile(r"^\s*\d+\s*(?:[>=]\s*\d+\s*)*$")


def ranking_parse(text: str, candidates: int) -> list[list[int]]:
    """``"1>2=3"`` → ``[[1], [2, 3]]`` (best first; a group is a tie). Every candidate exactly once."""
    if not _RANKING.match(text or ""):
        raise ApplicationError(
            f"The ranking {text!r} is not of the form 1>2=3 (candidate numbers joined by '>' or '=').",
            code="bad_ranking",
        )
    groups = [[int(n) for n in group.split("=")] for group in re.sub(r"\s+", "", text).split(">")]
    numbers = [n for group in groups for n in group]
    expected = list(range(1, candidates + 1))
    if sorted(numbers) != expected:
        raise ApplicationError(
            f"The ranking must name each of the candidates 1-{candidates} exactly once; got {text!r}.",
            code="bad_ranking",
        )
    return groups


def preference_save(
    *,
    annotator: User,
    conversation_id: int,
    ratings: Mapping[int, Mapping[str, object]],
    ranking: str = "",
    client_request_id: str = "",
    final: bool,
) -> RatingsSaved:
    """Save ``{turn_index: {"helpfulness", "faithfulness", "ethics": 1-5, "reason": str}}`` and the ranking.

    Final: every candidate needs all three scores and the ranking must be complete; the assignment completes.
    """
    check_request_id(client_request_id, final)
    with transaction.atomic():
        assignment = lock_assignment(annotator=annotator, conversation_id=conversation_id,
                                     kind=Batch.Kind.PREFERENCE)
        existing = {
            r.turn_id: r for r in Rating.objects.filter(annotator=annotator, turn__conversation_id=conversation_id)
        }
        if already_submitted(existing.values(), client_request_id, final):
            return RatingsSaved(conversation_id, 0, True, replayed=True)
        turns = rateable_turns(conversation_id, ratings.keys())
        values = {}
        for index, entry in ratings.items():
            what = f"Candidate {index + 1} (turn index {index})"
            fields = {d: check_score(entry.get(d), what=f"{what}, {d}") for d in DIMENSIONS if d in entry}
            if "reason" in entry:
                fields["comment"] = check_comment(entry.get("reason"), what=what)
            values[index] = fields
        order = sorted(turns)
        if final:
            by_turn_id = {turn.id: index for index, turn in turns.items()}
            merged = {by_turn_id[r.turn_id]: {d: getattr(r, d) for d in DIMENSIONS} for r in existing.values()
                      if r.turn_id in by_turn_id}
            missing = []
            for index in order:
                scores = merged.get(index, {}) | values.get(index, {})
                missing += [f"candidate {order.index(index) + 1} {d}" for d in DIMENSIONS if scores.get(d) is None]
                values.setdefault(index, {})
            if missing:
                raise ApplicationError("Score every candidate before saving: missing " + ", ".join(missing) + ".",
                                       code="incomplete", extra={"missing": missing})
            ranking_parse(ranking, len(order))
        saved = write_ratings(annotator=annotator, turns=turns, values=values, existing=existing, final=final,
                              client_request_id=client_request_id)
        Ranking.objects.update_or_create(
            conversation_id=conversation_id, annotator=annotator,
            defaults={"ranking": re.sub(r"\s+", "", ranking or "")[:200], "is_final": final,
                      "client_request_id": client_request_id if final else ""},
        )
        finish_assignment(assignment, final)
    return RatingsSaved(conversation_id, saved, final)
