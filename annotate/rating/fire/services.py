"""Writes of FIRE conversation ratings: each teacher feedback and each student response after the first scored
1-5 with an optional comment, on the save path every rating shares (annotate.rating.services)."""

from __future__ import annotations

from collections.abc import Mapping

from annotate.errors import ApplicationError
from annotate.models import Batch, Rating, Turn, User
from annotate.rating.services import (
    RatingsSaved,
    RatingValues,
    check_comment,
    check_score,
    ratings_write,
    turn_label,
)


def ratings_save(
    *,
    annotator: User,
    conversation_id: int,
    scores: Mapping[int, tuple[int | None, str]],
    client_request_id: str = "",
    final: bool,
) -> RatingsSaved:
    """Save the annotator's scores ``{turn_index: (score 1-5 or None, comment)}`` of one conversation.

    Draft (``final=False``): the given turns are saved as they are (scores may be missing).
    Final: drafts and the given scores together must score every rateable turn; the ratings become final and
    the assignment completes. Repeating a final save with the same ``client_request_id`` changes nothing.
    """

    def check(turns: dict[int, Turn]) -> RatingValues:
        values: RatingValues = {}
        for index, entry in scores.items():
            score, comment = entry if isinstance(entry, tuple | list) else (entry, "")
            what = turn_label(index).capitalize()
            values[index] = {"score": check_score(score, what=what), "comment": check_comment(comment, what=what)}
        return values

    def complete(turns: dict[int, Turn], existing: dict[int, Rating], values: RatingValues) -> None:
        by_turn_id = {turn.id: index for index, turn in turns.items()}
        merged: dict[int, object] = {by_turn_id[r.turn_id]: r.score for r in existing.values()
                                     if r.turn_id in by_turn_id}
        merged |= {index: fields["score"] for index, fields in values.items()}
        missing = sorted(index for index in turns if merged.get(index) is None)
        if missing:
            raise ApplicationError(
                "Score every rated turn before saving: no score yet for "
                + ", ".join(turn_label(i) for i in missing) + ".",
                code="incomplete",
                extra={"missing_turns": missing},
            )

    return ratings_write(annotator=annotator, conversation_id=conversation_id, kind=Batch.Kind.FIRE,
                         indices=scores.keys(), client_request_id=client_request_id, final=final,
                         check=check, complete=complete)
