"""Writes of MM-RLHF-style preference ratings (batches of kind ``preference``), on the save path every rating
shares (annotate.rating.services).

Each candidate response gets helpfulness, faithfulness and ethics scores (1-5) with a reason; the conversation gets
a ranking of its candidates with ties, e.g. ``1>2=3`` (candidate numbers start at 1, in the order shown).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from annotate.errors import ApplicationError
from annotate.models import Batch, Ranking, Rating, Turn, User
from annotate.rating.services import RatingsSaved, RatingValues, check_comment, check_score, ratings_write

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

    def check(turns: dict[int, Turn]) -> RatingValues:
        values: RatingValues = {}
        for index, entry in ratings.items():
            what = f"Candidate {index + 1} (turn index {index})"
            fields: dict[str, object] = {d: check_score(entry.get(d), what=f"{what}, {d}")
                                         for d in DIMENSIONS if d in entry}
            if "reason" in entry:
                fields["comment"] = check_comment(entry.get("reason"), what=what)
            values[index] = fields
        return values

    def complete(turns: dict[int, Turn], existing: dict[int, Rating], values: RatingValues) -> None:
        order = sorted(turns)
        by_turn_id = {turn.id: index for index, turn in turns.items()}
        merged = {by_turn_id[r.turn_id]: {d: getattr(r, d) for d in DIMENSIONS} for r in existing.values()
                  if r.turn_id in by_turn_id}
        missing = []
        for index in order:
            scores = merged.get(index, {}) | values.get(index, {})
            missing += [f"candidate {order.index(index) + 1} {d}" for d in DIMENSIONS if scores.get(d) is None]
        if missing:
            raise ApplicationError("Score every candidate before saving: missing " + ", ".join(missing) + ".",
                                   code="incomplete", extra={"missing": missing})
        ranking_parse(ranking, len(order))

    def ranking_write() -> None:
        Ranking.objects.update_or_create(
            conversation_id=conversation_id, annotator=annotator,
            defaults={"ranking": re.sub(r"\s+", "", ranking or "")[:200], "is_final": final,
                      "client_request_id": client_request_id if final else ""},
        )

    return ratings_write(annotator=annotator, conversation_id=conversation_id, kind=Batch.Kind.PREFERENCE,
                         indices=ratings.keys(), client_request_id=client_request_id, final=final,
                         check=check, complete=complete, also=ranking_write)
