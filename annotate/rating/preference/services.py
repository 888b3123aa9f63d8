"""Writes of MM-RLHF-style preference ratings (batches of kind ``preference``), on the save path every rating
shares (annotate.rating.services).

Each candidate response gets helpfulness, faithfulness and ethics scores (1-5) with a reason (required on the final
save unless the batch turned ``reasons_required`` off); the conversation gets a ranking of its candidates with ties,
e.g. ``1>2=3`` (candidate numbers start at 1, in the order shown). A final save that lacks something names all of
it in one message: which candidates miss which score or their reason, and the ranking.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from django.utils.translation import gettext

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


def ranking_from_positions(positions: Mapping[int, int | None], candidates: int) -> str:
    """Rank positions per candidate (``{1: 2, 2: 1, 3: 2}``: candidate 1 second, ...) as a ranking text
    (``2>1=3``): equal positions are a tie. "" while a candidate has no position."""
    places = {n: positions.get(n) for n in range(1, candidates + 1)}
    if any(place is None for place in places.values()):
        return ""
    levels = sorted({place for place in places.values() if place is not None})
    return ">".join("=".join(str(n) for n, place in places.items() if place == level) for level in levels)


def ranking_contradictions(groups: list[list[int]], scores: Mapping[int, tuple[int, ...]]) -> list[tuple[int, int]]:
    """(ranked higher, scored higher) for each pair of candidates where the ranking puts one above the other although
    the other's scores are at least as high on every dimension and higher on one (the page warns; the quality page
    counts them). Candidates without all their scores are not compared."""
    level = {number: index for index, group in enumerate(groups) for number in group}
    found = []
    for above in sorted(level):
        for below in sorted(level):
            if level[above] >= level[below] or above not in scores or below not in scores:
                continue
            mine, theirs = scores[above], scores[below]
            if all(t >= m for m, t in zip(mine, theirs, strict=True)) and theirs != mine:
                found.append((above, below))
    return found


def _missing_message(missing: list[tuple[int, list[str]]], ranking_missing: bool) -> str:
    """One short sentence: "Complete before saving: candidate 1 (faithfulness, reason), candidate 3 (reason) and
    the ranking." """
    parts = [gettext("candidate %(number)s (%(what)s)") % {"number": number, "what": ", ".join(what)}
             for number, what in missing]
    if ranking_missing:
        parts.append(gettext("the ranking"))
    listed = parts[0] if len(parts) == 1 else gettext("%(items)s and %(last)s") % {
        "items": ", ".join(parts[:-1]), "last": parts[-1]}
    return gettext("Complete before saving: %(missing)s.") % {"missing": listed}


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

    Final: every candidate needs all three scores and (unless the batch made reasons optional) a reason, and the
    ranking must be complete; what is missing is refused in one message, listed in ``extra["missing"]``
    (``"candidate 1 faithfulness"``, ``"candidate 3 reason"``, ``"ranking"``). The assignment then completes.
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
        merged = {by_turn_id[r.turn_id]: {**{d: getattr(r, d) for d in DIMENSIONS}, "comment": r.comment}
                  for r in existing.values() if r.turn_id in by_turn_id}
        reasons_required = Batch.objects.filter(conversations__id=conversation_id).values_list(
            "reasons_required", flat=True).first()
        missing: list[tuple[int, list[str]]] = []
        for number, index in enumerate(order, 1):
            given = merged.get(index, {}) | values.get(index, {})
            lacking = [d for d in DIMENSIONS if given.get(d) is None]
            if reasons_required and not str(given.get("comment") or "").strip():
                lacking.append("reason")
            if lacking:
                missing.append((number, lacking))
        ranking_missing = not (ranking or "").strip()
        if missing or ranking_missing:
            raise ApplicationError(
                _missing_message(missing, ranking_missing), code="incomplete",
                extra={"missing": [f"candidate {number} {what}" for number, lacking in missing for what in lacking]
                       + (["ranking"] if ranking_missing else [])},
            )
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
