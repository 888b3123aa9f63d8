"""A batch's participants table: each invited participant with how far they went, their work, their
quality (annotate.crowd.attention and the quality page's figures), the app's suggested approve or reject with its
reason, the researcher's latest decision, and the bonus the batch's rule gives them. A fixed number of grouped
queries whatever the number of participants.

The suggestion follows the crowd platforms' rules: finished participants are approved unless they failed as many
attention checks as the study allows (Prolific's two, where the study sets no limit); a participant screened out
by a comprehension check, who declined the consent, returned or ran out of time is neither approved nor rejected
(Prolific asks them to return the study; nothing is paid through the app); one still working gets no suggestion
yet. Flags (speed, feedback sent despite a leak warning, low gold accuracy) never reject by themselves: they ask
for a look before approving.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.db.models import Count, Max, Q
from django.utils import timezone

from annotate.crowd.attention import PROLIFIC_FAILURES_TO_REJECT
from annotate.crowd.decisions import latest_decisions
from annotate.crowd.study import study_of
from annotate.models import (
    Assignment,
    Batch,
    CrowdStudy,
    ParticipantDecision,
    Participation,
    Session,
)
from annotate.participation import held_back
from evaluation.quality.selectors import LOW_GOLD_ACCURACY, MIN_GOLD_FOR_FLAG, AnnotatorQuality, batch_quality

APPROVE, REJECT = ParticipantDecision.Decision.APPROVE.value, ParticipantDecision.Decision.REJECT.value


@dataclass
class ParticipantRow:
    participation: Participation
    state: str  # consent, screening, pre_survey, items, finished, or the end's reason
    completed: int = 0
    corrected_sessions: int = 0
    minutes: float | None = None
    quality: AnnotatorQuality | None = None
    flags: list[str] = field(default_factory=list)
    suggestion: str = ""  # approve, reject, "" (none)
    suggestion_reason: str = ""
    decision: ParticipantDecision | None = None
    bonus: Decimal = Decimal("0.00")
    history: list[ParticipantDecision] = field(default_factory=list)  # every decision, newest first (when asked)

    @property
    def pseudonym(self) -> str:
        return self.participation.user.pseudonym

    @property
    def participant_id(self) -> str:
        return self.participation.user.external_id or ""

    @property
    def decided(self) -> str:
        return self.decision.decision if self.decision is not None else ""


def _state(participation: Participation, study: CrowdStudy, completed: int, size: int | None) -> str:
    if participation.ended_at is not None:
        return participation.end_reason
    if participation.finished_at is not None:
        return "finished"
    before = held_back(participation, study)
    if before is not None:
        return before
    if size and completed >= size and (not study.post_survey or participation.post_survey_at is not None):
        return "finished"  # their share is done and nothing is left to ask, though they never opened the code page
    return "post_survey" if size and completed >= size else "items"


def _flags(quality: AnnotatorQuality | None) -> list[str]:
    if quality is None:
        return []
    flags = []
    if quality.speed_flags:
        flags.append(f"{quality.speed_flags} fast round(s) or session(s)")
    if quality.leaks_sent:
        flags.append(f"{quality.leaks_sent} feedback sent despite a leak warning")
    accuracy = quality.gold_accuracy
    if quality.gold_judged >= MIN_GOLD_FOR_FLAG and accuracy is not None and accuracy < LOW_GOLD_ACCURACY:
        flags.append(f"gold accuracy {round(accuracy * 100)}% of {quality.gold_judged}")
    return flags


def _suggest(row: ParticipantRow, limit: int) -> tuple[str, str]:
    failed = row.quality.attention_failed if row.quality else 0
    checked = row.quality.attention_checks if row.quality else 0
    reasons = {"no_consent": "Declined the consent.", "returned": "Returned the study.",
               "timed_out": "Ran out of the study's time limit.",
               "screened_out": "Screened out by the comprehension questions (platforms ask them to return the study; "
                               "do not reject)."}
    if row.state in reasons:
        return "", reasons[row.state]
    if row.state == "attention" or (row.state == "finished" and failed >= limit):
        return REJECT, f"Failed {failed} of {checked} attention checks (the study allows {limit - 1})."
    if row.state != "finished":
        return "", "Still working on the study."
    return APPROVE, "Finished their share." + (f" Look first: {'; '.join(row.flags)}." if row.flags else "")


def bonus_for(study: CrowdStudy, completed: int, corrected: int) -> Decimal:
    """The bonus the study's rule gives for this work (paid only to approved participants)."""
    units: dict[str, int] = {CrowdStudy.BonusRule.PER_ITEM: completed,
                             CrowdStudy.BonusRule.PER_CORRECTED_SESSION: corrected, CrowdStudy.BonusRule.FIXED: 1}
    amount = Decimal(str(study.bonus_amount)) * units.get(str(study.bonus_rule), 0)
    return amount.quantize(Decimal("0.01"))


def participants_table(batch: Batch, *, with_history: bool = False) -> list[ParticipantRow]:
    """Every participant of the batch, in the order they joined; ``with_history``: with every decision."""
    study = study_of(batch)
    participations = list(Participation.objects.filter(batch=batch).select_related("user", "user__invite_link"))
    users = [p.user_id for p in participations]
    work = dict(Assignment.objects.filter(work_item__batch=batch, annotator_id__in=users).values_list("annotator")
                .annotate(n=Count("id", filter=Q(status=Assignment.Status.COMPLETED))))
    last_active: dict[int, datetime | None] = dict(
        Assignment.objects.filter(work_item__batch=batch, annotator_id__in=users).values_list("annotator")
        .annotate(at=Max("finished_at")))
    corrected = dict(Session.objects.filter(batch=batch, annotator_id__in=users, status=Session.Status.COMPLETED,
                                            corrected_round__gte=1).values_list("annotator").annotate(n=Count("id")))
    quality = {q.annotator_id: q for q in batch_quality(batch).annotators}
    decisions = latest_decisions(batch)
    limit = study.max_attention_failures or PROLIFIC_FAILURES_TO_REJECT
    size = batch.items_per_participant or None
    rows = []
    for participation in participations:
        completed = work.get(participation.user_id, 0)
        row = ParticipantRow(participation=participation, state=_state(participation, study, completed, size),
                             completed=completed, corrected_sessions=corrected.get(participation.user_id, 0),
                             quality=quality.get(participation.user_id), decision=decisions.get(participation.pk))
        end = participation.finished_at or participation.ended_at or last_active.get(participation.user_id)
        if end is None and row.state in ("items", "post_survey", "consent", "screening", "pre_survey"):
            end = timezone.now()
        row.minutes = round((end - participation.started_at).total_seconds() / 60, 1) if end else None
        row.flags = _flags(row.quality)
        row.suggestion, row.suggestion_reason = _suggest(row, limit)
        row.bonus = bonus_for(study, row.completed, row.corrected_sessions)
        rows.append(row)
    if with_history:
        history = decision_history(batch)
        for row in rows:
            row.history = history.get(row.participation.pk, [])
    return rows


def decision_history(batch: Batch) -> dict[int, list[ParticipantDecision]]:
    """Every decision on the batch's participants, newest first, by participation (the audit trail)."""
    history: dict[int, list[ParticipantDecision]] = {}
    for decision in ParticipantDecision.objects.filter(participation__batch=batch).select_related("decided_by"):
        history.setdefault(decision.participation_id, []).append(decision)
    return history
