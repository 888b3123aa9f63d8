"""The researchers' approve or reject of a batch's participants (each decision a new row: the latest counts, the
earlier ones are its audit trail), and a batch's participants found by the ids a crowd platform lists them by."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

from annotate.errors import InvalidFields
from annotate.models import Batch, ParticipantDecision, Participation, User

MAX_REASON = 500


def participations_by_ids(batch: Batch, ids: Iterable[str]) -> dict[str, Participation]:
    """The batch's participations named by platform id (e.g. a Prolific PID) or pseudonym, by the id given (in the
    order given); InvalidFields naming every id that is no participant of the batch."""
    wanted = [str(i).strip() for i in ids if str(i).strip()]
    found = {}
    for participation in Participation.objects.filter(batch=batch).filter(
            Q(user__external_id__in=wanted) | Q(user__pseudonym__in=wanted)).select_related("user"):
        found[participation.user.external_id or ""] = participation
        found[participation.user.pseudonym] = participation
    missing = [i for i in wanted if i not in found]
    if missing:
        raise InvalidFields([("participants", f"no participant of batch {batch.name!r} has the id "
                                              f"{', '.join(map(repr, missing[:20]))}")])
    return {i: found[i] for i in wanted}


def participant_decide(*, participation: Participation, decision: str, reason: str = "", by: User | None,
                       suggested: str = "") -> ParticipantDecision:
    """Record a decision (approve or reject) with its reason; a reject needs one (platforms ask for it)."""
    reason = (reason or "").strip()
    problems = []
    if decision not in ParticipantDecision.Decision.values:
        problems.append(("decision", "approve or reject"))
    if decision == ParticipantDecision.Decision.REJECT and not reason:
        problems.append(("reason", "say why you reject this participant (the platform shows it to them)"))
    if len(reason) > MAX_REASON:
        problems.append(("reason", f"at most {MAX_REASON} characters"))
    if problems:
        raise InvalidFields(problems)
    return ParticipantDecision.objects.create(participation=participation, decision=decision, reason=reason,
                                              suggested=suggested, decided_by=by)


def latest_decisions(batch: Batch) -> dict[int, ParticipantDecision]:
    """Per participation of the batch: its latest decision, with how many came before (``earlier``)."""
    latest: dict[int, ParticipantDecision] = {}
    counts: dict[int, int] = {}
    for decision in ParticipantDecision.objects.filter(participation__batch=batch).select_related("decided_by"):
        counts[decision.participation_id] = counts.get(decision.participation_id, 0) + 1
        latest.setdefault(decision.participation_id, decision)  # ordered newest first
    for participation_id, decision in latest.items():
        decision.earlier = counts[participation_id] - 1  # type: ignore[attr-defined]
    return latest
