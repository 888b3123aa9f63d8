"""Reviewer verdict overrides (an admin or reviewer may override a verdict, audited).

A researcher who is a member of the batch (or an admin) changes a round's final verdict with a reason. The
change is written to the `VerdictOverride` audit trail (who, when, why, old → new), the round's verdict source
becomes ``reviewer``, and the session's outcome is recomputed from its rounds' final verdicts:

- ``corrected_round`` = the index of the first round whose final verdict is correct;
- else ``None`` (never corrected). When the session ended early (its last round was judged correct and the
  reviewer now says it was wrong), it has no later rounds to look at and also counts as never corrected; the
  result says so (``truncated``).

The session stays completed. The evaluation app's counters are told on commit (``outcome_record`` moves a
session from its old counter cell to the new one).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from annotate.errors import ApplicationError, Conflict
from annotate.models import Round, Session, User, VerdictOverride
from annotate.review.selectors import review_round_batch
from annotate.sessions.completion import session_completed

MAX_REASON_CHARS = 2000


@dataclass(frozen=True)
class OverrideResult:
    override: VerdictOverride
    round: Round
    session: Session
    old_corrected_round: int | None
    truncated: bool  # the session ended before max_rounds and no round is correct any more


def corrected_round_of(verdicts: list[tuple[int, bool | None]]) -> int | None:
    """The first round (by index) whose final verdict is correct, else None."""
    for index, verdict in sorted(verdicts):
        if verdict:
            return index
    return None


def round_override_verdict(*, round_id: int, reviewer: User, correct: bool, reason: str) -> OverrideResult:
    reason = (reason or "").strip()
    review_round_batch(reviewer, round_id)
    if not reason:
        raise ApplicationError("Give a reason for the override (it is kept in the audit trail).", code="reason")
    if len(reason) > MAX_REASON_CHARS:
        raise ApplicationError(f"The reason is too long ({len(reason)} characters; at most {MAX_REASON_CHARS}).",
                               code="reason")
    correct = bool(correct)
    with transaction.atomic():
        session_id = Round.objects.values_list("session_id", flat=True).get(pk=round_id)
        session = Session.objects.select_for_update(of=("self",)).select_related("batch").get(pk=session_id)
        if session.status != Session.Status.COMPLETED:
            raise Conflict("Only verdicts of completed sessions can be overridden; this session is "
                           f"{session.get_status_display().lower()}.")
        rnd = Round.objects.get(pk=round_id)
        if rnd.generation_status != Round.Generation.DONE:
            raise Conflict("This round has no model answer to judge.")
        if rnd.final_verdict is correct:
            word = "correct" if correct else "wrong"
            raise ApplicationError(f"The round is already judged {word}; nothing to override.",
                                   code="verdict_unchanged")
        override = VerdictOverride.objects.create(
            round=rnd, reviewer=reviewer, old_verdict=rnd.final_verdict, new_verdict=correct, reason=reason
        )
        rnd.final_verdict = correct
        rnd.verdict_source = Round.VerdictSource.REVIEWER
        rnd.save(update_fields=["final_verdict", "verdict_source"])

        rounds = list(session.rounds.values_list("index", "final_verdict"))
        old = session.corrected_round
        session.corrected_round = corrected_round_of(rounds)
        last_index = max(index for index, _ in rounds)
        truncated = session.corrected_round is None and last_index < session.batch.max_rounds
        if session.corrected_round != old:
            session.save(update_fields=["corrected_round"])
            transaction.on_commit(lambda: _recount(session.id))
    return OverrideResult(override=override, round=rnd, session=session, old_corrected_round=old,
                          truncated=truncated)


def _recount(session_id: int) -> None:
    """Tell the evaluation app's counters (the same hook as a session completing)."""
    session_completed(session_id, in_worker=False)
