"""Attention checks: gold items (Task.is_gold) served at the batch's gold rate (annotate.queue.gold) and scored here,
for the quality page, the participants table and the end of a participation after too many failures.

A gold round is scored when its task is a gold ``manual`` task whose ``metadata["gold_check_type"]`` is ``choice``,
``number`` or ``text``: the annotator's verdict on the model's answer (the one they gave, even when a reviewer
overrode it later) is compared with ``verify(gold_check_type, answer, ground truth, options)``. Other gold rounds
are *unscored*. An attention check is one gold session with a scored round; it is *failed* when any of its scored
verdicts disagrees with the check.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from django.db.models import OuterRef, Subquery

from annotate.models import Batch, Round, Task, VerdictOverride
from annotate.sessions.verification import verify

GOLD_CHECK_TYPES = ("choice", "number", "text")
PROLIFIC_FAILURES_TO_REJECT = 2  # Prolific lets researchers reject participants who fail two attention checks


@dataclass(frozen=True)
class GoldRound:
    annotator_id: int
    session_id: int
    agreed: bool | None  # None: unscored (no usable gold_check_type)


def gold_rounds(batch: Batch, annotator_ids: Iterable[int] | None = None) -> Iterator[GoldRound]:
    """Every gold round of the batch judged by a person (one query), scored."""
    first_override = VerdictOverride.objects.filter(round=OuterRef("pk")).order_by("created_at", "id")
    rounds = Round.objects.filter(
        session__batch=batch,
        session__annotator__isnull=False,
        session__task__is_gold=True,
        session__task__answer_type=Task.AnswerType.MANUAL,
        generation_status=Round.Generation.DONE,
        verdict_source__in=[Round.VerdictSource.ANNOTATOR, Round.VerdictSource.REVIEWER],
    )
    if annotator_ids is not None:
        rounds = rounds.filter(session__annotator_id__in=list(annotator_ids))
    rows = rounds.annotate(annotator_verdict=Subquery(first_override.values("old_verdict")[:1])).values_list(
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
