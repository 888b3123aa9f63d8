"""The researcher's decisions on a batch's participants, with the app's suggestion of the moment kept beside each
(annotate.crowd.decisions stores them), and returns marked from a crowd platform's list."""

from __future__ import annotations

from django.db import transaction

from annotate.crowd.decisions import participant_decide, participations_by_ids
from annotate.crowd.ending import participant_return
from annotate.errors import InvalidFields
from annotate.models import Batch, User
from evaluation.participants.selectors import participants_table


def participants_decide(*, batch: Batch, decisions: list[tuple[str, str, str]], by: User | None) -> int:
    """(participant id or pseudonym, approve|reject, reason) each; all recorded or none."""
    if not decisions or any(not str(pid).strip() for pid, _, _ in decisions):
        raise InvalidFields([("decisions", "name each participant by their platform id or pseudonym")])
    found = participations_by_ids(batch, [pid for pid, _, _ in decisions])
    suggested = {row.participation.pk: row.suggestion for row in participants_table(batch)}
    with transaction.atomic():
        for pid, decision, reason in decisions:
            participation = found[pid.strip()]
            participant_decide(participation=participation, decision=decision, reason=reason, by=by,
                               suggested=suggested.get(participation.pk, ""))
    return len(decisions)


def suggestions_accept(*, batch: Batch, by: User | None) -> int:
    """Every participant without a decision who has a suggestion gets it as their decision, with its reason."""
    decided = 0
    with transaction.atomic():
        for row in participants_table(batch):
            if row.decision is None and row.suggestion:
                participant_decide(participation=row.participation, decision=row.suggestion,
                                   reason=row.suggestion_reason, by=by, suggested=row.suggestion)
                decided += 1
    return decided


def participants_mark_returned(*, batch: Batch, ids: list[str], by: User | None) -> int:
    """Participants the platform lists as returned: their participation ends and their items are freed at once.
    Those already finished or ended are left as they are."""
    returned = 0
    for participation in {p.pk: p for p in participations_by_ids(batch, ids).values()}.values():
        if participation.ended_at is None and participation.finished_at is None:
            participant_return(user=participation.user, by=by)
            returned += 1
    return returned
