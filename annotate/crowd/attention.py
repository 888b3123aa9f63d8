"""Attention checks: gold items (Task.is_gold) served where each person's plan puts them (annotate.queue.gold) and
scored here, for the quality page, the participants table and the end of a participation after too many failures.

A check is scored without showing anything a regular item of the batch does not show (the rule and its reasons:
docs/decisions/attention-checks.md), by what the person does anyway on an item of its answer type:

- a gold ``manual`` task (the person judges the model's answer): their verdict (the one they gave, even when a
  reviewer overrode it later) against ``verify(meta["gold_check_type"], answer, ground truth, options)``, for
  ``gold_check_type`` ``choice``, ``number`` or ``text``; every judged round counts;
- a gold task checked automatically (``choice``, ``number``, ``text``: the person writes feedback when the model is
  wrong): their first feedback against ``meta["gold_feedback_terms"]``, the words a careful reader of this item
  would name (any one of them, whole words, case and accents aside).

Other gold rounds are *unscored* (no usable meta, or the model was right at once so no feedback was asked). An
attention check is one gold session with a scored round; it is *failed* when any of its scored rounds disagrees.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from django.db.models import OuterRef, QuerySet, Subquery

from annotate.models import Batch, Round, Task, VerdictOverride
from annotate.sessions.verification import verify

GOLD_CHECK_TYPES = ("choice", "number", "text")
FEEDBACK_CHECKED_TYPES = (Task.AnswerType.CHOICE, Task.AnswerType.NUMBER, Task.AnswerType.TEXT)
PROLIFIC_FAILURES_TO_REJECT = 2  # Prolific lets researchers reject participants who fail two attention checks


@dataclass(frozen=True)
class GoldRound:
    annotator_id: int
    session_id: int
    agreed: bool | None  # None: unscored (no usable gold meta)


def gold_rounds(batch: Batch, annotator_ids: Iterable[int] | None = None) -> Iterator[GoldRound]:
    """Every gold round of the batch where a person judged or wrote feedback (two queries), scored."""
    rounds = Round.objects.filter(session__batch=batch, session__annotator__isnull=False, session__task__is_gold=True)
    if annotator_ids is not None:
        rounds = rounds.filter(session__annotator_id__in=list(annotator_ids))
    yield from _verdict_rounds(rounds)
    yield from _feedback_rounds(rounds)


def _verdict_rounds(rounds: QuerySet[Round]) -> Iterator[GoldRound]:
    """The verdicts a person gave on gold ``manual`` tasks."""
    first_override = VerdictOverride.objects.filter(round=OuterRef("pk")).order_by("created_at", "id")
    rows = rounds.filter(
        session__task__answer_type=Task.AnswerType.MANUAL, generation_status=Round.Generation.DONE,
        verdict_source__in=[Round.VerdictSource.ANNOTATOR, Round.VerdictSource.REVIEWER],
    ).annotate(annotator_verdict=Subquery(first_override.values("old_verdict")[:1])).values_list(
        "session__annotator_id", "session_id", "answer_text", "final_verdict", "verdict_source",
        "annotator_verdict", "session__task__ground_truth", "session__task__options", "session__task__metadata")
    for annotator_id, session_id, answer, final, source, before_override, truth, options, metadata in rows:
        given = before_override if source == Round.VerdictSource.REVIEWER else final
        if given is None or annotator_id is None:
            continue
        check_type = (metadata or {}).get("gold_check_type")
        if check_type not in GOLD_CHECK_TYPES:
            yield GoldRound(annotator_id, session_id, None)
            continue
        expected = bool(verify(check_type, answer, truth, options or []).verdict)
        yield GoldRound(annotator_id, session_id, given == expected)


def _feedback_rounds(rounds: QuerySet[Round]) -> Iterator[GoldRound]:
    """The first feedback of each person on an automatically checked gold task (round 1 carries it)."""
    rounds = rounds.filter(session__task__answer_type__in=FEEDBACK_CHECKED_TYPES, index=1)
    for annotator_id, session_id, feedback, metadata in rounds.values_list(
            "session__annotator_id", "session_id", "feedback_text", "session__task__metadata"):
        terms = (metadata or {}).get("gold_feedback_terms")
        if not terms or not isinstance(terms, list):
            yield GoldRound(annotator_id, session_id, None)
            continue
        yield GoldRound(annotator_id, session_id, feedback_mentions(feedback, terms))


def _plain(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).split())


def feedback_mentions(feedback: str, terms: Iterable[str]) -> bool:
    """Does the feedback name one of the terms, as whole words (case, accents and spacing aside)?"""
    plain = _plain(feedback)
    return any(term.strip() and re.search(rf"(?<!\w){re.escape(_plain(term))}(?!\w)", plain) for term in terms)


@dataclass
class AttentionChecks:
    rounds_judged: int = 0  # scored gold rounds
    rounds_agreed: int = 0
    rounds_unscored: int = 0
    sessions: dict[int, bool] = field(default_factory=dict)  # gold session -> failed

    @property
    def checked(self) -> int:
        return len(self.sessions)

    @property
    def failed(self) -> int:
        return sum(self.sessions.values())


def attention_checks(batch: Batch, annotator_ids: Iterable[int] | None = None) -> dict[int, AttentionChecks]:
    """Per annotator: their scored gold rounds and attention checks (gold sessions) met and failed."""
    checks: dict[int, AttentionChecks] = {}
    for gold in gold_rounds(batch, annotator_ids):
        row = checks.setdefault(gold.annotator_id, AttentionChecks())
        if gold.agreed is None:
            row.rounds_unscored += 1
            continue
        row.rounds_judged += 1
        row.rounds_agreed += int(gold.agreed)
        row.sessions[gold.session_id] = row.sessions.get(gold.session_id, False) or not gold.agreed
    return checks
