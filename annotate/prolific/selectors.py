"""Reads for the Prolific panels and the API: the batch's study, its submissions beside our participants, the
decisions and bonuses sent, the audit trail of calls. Whether a token is set is said; the token never is."""

from __future__ import annotations

import os
from dataclasses import dataclass

from django.conf import settings

from annotate.models import (
    Batch,
    Participation,
    ProlificAction,
    ProlificCall,
    ProlificStudy,
    ProlificSubmission,
)


def token_configured() -> bool:
    return bool(os.environ.get(settings.PROLIFIC_TOKEN_ENV, "").strip())


def study_for_batch(batch: Batch) -> ProlificStudy | None:
    return ProlificStudy.objects.filter(batch=batch).first()


@dataclass
class SubmissionRow:
    pseudonym: str
    ours: str  # our state: finished, the end's reason, or working
    prolific: str  # Prolific's status, "" when Prolific lists none
    decision: str  # the decision sent to Prolific, if any
    bonus: str  # the bonus state, if any


def submission_rows(batch: Batch) -> list[SubmissionRow]:
    """Each participant of the batch with Prolific's status beside ours (a fixed number of queries)."""
    by_participation = {s.participation_id: s for s in ProlificSubmission.objects.filter(
        study__batch=batch, participation__isnull=False)}
    actions = {(a.participant_id, a.kind == ProlificAction.Kind.BONUS): a
               for a in ProlificAction.objects.filter(batch=batch)}
    rows = []
    for p in Participation.objects.filter(batch=batch).select_related("user"):
        sub = by_participation.get(p.pk)
        pid = p.user.external_id or ""
        decision, bonus = actions.get((pid, False)), actions.get((pid, True))
        rows.append(SubmissionRow(
            pseudonym=p.user.pseudonym,
            ours=p.end_reason or ("finished" if p.finished_at else "working"),
            prolific=sub.status if sub else "",
            decision=f"{decision.kind} ({decision.get_state_display().lower()})" if decision else "",
            bonus=f"{bonus.amount} ({bonus.get_state_display().lower()})" if bonus else ""))
    return rows


def calls_of(batch: Batch, limit: int = 50) -> list[ProlificCall]:
    return list(ProlificCall.objects.filter(batch=batch).select_related("by")[:limit])


def participant_ids_by_pseudonym(batch: Batch, pseudonyms: list[str]) -> dict[str, str]:
    """Prolific ids of the batch's participants named by pseudonym (pages show pseudonyms, Prolific wants ids)."""
    return {p: pid for p, pid in Participation.objects.filter(batch=batch, user__pseudonym__in=pseudonyms)
            .values_list("user__pseudonym", "user__external_id") if pid}
