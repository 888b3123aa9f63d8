"""Approve, reject and pay bonuses on Prolific, each first as a dry run, never twice.

Every decision or bonus is a ProlificAction row with a unique key (one decision and one bonus per participant
and batch), written before anything is sent, then marked as it goes: pending, set up (bonuses), sending, done.
So a repeated or retried action finds its row and does not send again, and one whose worker died between
Prolific's answer and our record is settled by asking Prolific first: a submission already approved or rejected,
a bonus already listed on the submission, is recorded as done without sending anything.

Bonuses follow Prolific's two steps: set up (POST submissions/bonus-payments/, pays nothing) then pay the bulk id
(POST bulk-bonus-payments/{id}/pay/, which Prolific warns is not idempotent). The amounts are the batch's bonus
rule, given by the hook the evaluation app registers (``bonus_source_register``): annotate never imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError
from django.utils import timezone
from django.utils.translation import gettext as _

from annotate.crowd.decisions import latest_decisions, participant_decide
from annotate.errors import Conflict, InvalidFields, NotFound
from annotate.models import (
    Batch,
    ParticipantDecision,
    ProlificAction,
    ProlificStudy,
    ProlificSubmission,
    User,
)
from annotate.prolific.audit import client_for
from annotate.prolific.client import ProlificClient, ProlificError, ProlificUnavailable
from annotate.prolific.sync import prolific_submissions_sync

# Prolific's rejection categories (the transition's rejection_category), with what each means.
REJECTION_CATEGORIES = {
    "TOO_QUICKLY": "Completed too quickly", "TOO_SLOWLY": "Completed too slowly",
    "FAILED_INSTRUCTIONS": "Did not follow the instructions", "INCOMP_LONGITUDINAL": "Did not finish a longitudinal study",
    "FAILED_CHECK": "Failed attention checks", "LOW_EFFORT": "Low effort", "MALINGERING": "Malingering",
    "NO_CODE": "No completion code", "BAD_CODE": "Wrong completion code", "NO_DATA": "No data",
    "UNSUPP_DEVICE": "Unsupported device", "OTHER": "Other",
}
MIN_REJECT_MESSAGE = 100  # Prolific's minimum for the message a rejected participant reads
AWAITING = "AWAITING REVIEW"
DECIDED = {"APPROVED": ProlificAction.Kind.APPROVE, "REJECTED": ProlificAction.Kind.REJECT}

BonusSource = Callable[[Batch], dict[str, Decimal]]
_bonus_source: list[BonusSource] = []


def bonus_source_register(source: BonusSource) -> None:
    """The evaluation app gives the bonuses of a batch's rule: {Prolific id: amount} for approved participants."""
    _bonus_source[:] = [source]


@dataclass
class Line:
    participant_id: str
    kind: str
    amount: Decimal | None = None
    note: str = ""
    recognised: bool = False  # done on Prolific, not yet on our record


@dataclass
class Plan:
    """What was (dry run: would be) sent, what was recognised as already done, and the problems."""
    dry_run: bool
    send: list[Line] = field(default_factory=list)
    already: list[Line] = field(default_factory=list)
    waiting: list[Line] = field(default_factory=list)
    total: Decimal = Decimal("0.00")
    total_with_fees: Decimal | None = None


def _study(batch: Batch) -> ProlificStudy:
    study = ProlificStudy.objects.filter(batch=batch).first()
    if study is None:
        raise NotFound(_("This batch has no Prolific study yet: create it from the batch's invites page."))
    return study


def _submissions(study: ProlificStudy, by: User | None) -> dict[str, ProlificSubmission]:
    """The study's submissions by Prolific id, fetched now (so a decision is made on Prolific's latest status)."""
    prolific_submissions_sync(study=study, by=by)
    return {s.participant_id: s for s in ProlificSubmission.objects.filter(study=study)}


def _key(batch: Batch, pid: str, what: str) -> str:
    return f"{what}:{batch.pk}:{pid}"


# --- approve and reject --------------------------------------------------------------------------------------


def _check_decision(pid: str, decision: str, category: str, message: str) -> list[tuple[str, str]]:
    problems = []
    if decision not in (ProlificAction.Kind.APPROVE, ProlificAction.Kind.REJECT):
        problems.append((pid, _("the decision is approve or reject")))
    elif decision == ProlificAction.Kind.REJECT:
        if category not in REJECTION_CATEGORIES:
            problems.append((pid, _("a rejection needs one of Prolific's categories: %(names)s")
                             % {"names": ", ".join(REJECTION_CATEGORIES)}))
        if len(message.strip()) < MIN_REJECT_MESSAGE:
            problems.append((pid, _("Prolific asks for a message of at least %(n)s characters telling the "
                                    "participant why (this one has %(m)s)") % {"n": MIN_REJECT_MESSAGE,
                                                                                "m": len(message.strip())}))
    return problems


def prolific_decisions(*, batch: Batch, decisions: list[tuple[str, str, str, str]], by: User | None,
                       dry_run: bool = True) -> Plan:
    """Approve or reject submissions on Prolific: (Prolific id, approve|reject, rejection category, message)."""
    study = _study(batch)
    subs = _submissions(study, by)
    plan = Plan(dry_run=dry_run)
    problems: list[tuple[str, str]] = []
    for pid, decision, category, message in decisions:
        pid = pid.strip()
        problems += _check_decision(pid, decision, category, message)
        sub = subs.get(pid)
        done = ProlificAction.objects.filter(key=_key(batch, pid, "decision"), state=ProlificAction.State.DONE).first()
        if done is not None:
            plan.already.append(Line(pid, done.kind, note=_("decided on Prolific on %(at)s")
                                     % {"at": f"{done.done_at:%Y-%m-%d %H:%M}" if done.done_at else "?"}))
        elif sub is None:
            problems.append((pid, _("Prolific lists no submission for this participant in the study")))
        elif sub.status in DECIDED:
            plan.already.append(Line(pid, DECIDED[sub.status], note=_("already %(s)s on Prolific")
                                     % {"s": sub.status.lower()}, recognised=True))
        elif sub.status != AWAITING:
            problems.append((pid, _("Prolific lists them as %(s)s: only a submission awaiting review can be "
                                    "approved or rejected") % {"s": sub.status}))
        else:
            plan.send.append(Line(pid, decision, note=category if decision == ProlificAction.Kind.REJECT else ""))
    if problems:
        raise InvalidFields(problems)
    if dry_run:
        return plan
    client = client_for(batch=batch, by=by)
    wanted = {pid.strip(): (category, message.strip()) for pid, _d, category, message in decisions}
    for line in plan.already:  # recognised on Prolific: recorded without sending
        if line.recognised:
            _decision_done(batch, subs[line.participant_id], line.kind, *wanted[line.participant_id], by=by)
    for line in plan.send:
        category, message = wanted[line.participant_id]
        _decision_send(client, batch, subs[line.participant_id], line.kind, category, message, by=by)
    return plan


def _decision_row(batch, sub, kind, category, message, by) -> ProlificAction:
    row, _created = ProlificAction.objects.get_or_create(
        key=_key(batch, sub.participant_id, "decision"),
        defaults={"batch": batch, "kind": kind, "participant_id": sub.participant_id,
                  "submission_id": sub.submission_id, "rejection_category": category if kind == "reject" else "",
                  "message": message if kind == "reject" else "", "by": by})
    return row


def _decision_done(batch, sub, kind, category, message, *, by) -> None:
    row = _decision_row(batch, sub, kind, category, message, by)
    ProlificAction.objects.filter(pk=row.pk).update(state=ProlificAction.State.DONE, kind=kind, done_at=timezone.now())
    _mirror(sub, kind, message, by)


def _decision_send(client: ProlificClient, batch, sub, kind, category, message, *, by) -> None:
    row = _decision_row(batch, sub, kind, category, message, by)
    if row.state == ProlificAction.State.DONE:
        return
    # An earlier try that never reached Prolific (its submission still awaits review) is replaced by this one.
    ProlificAction.objects.filter(pk=row.pk).update(
        state=ProlificAction.State.SENDING, sent_at=timezone.now(), kind=kind, rejection_category=category if kind == "reject" else "",
        message=message if kind == "reject" else "", error="")
    body = {"action": "APPROVE"} if kind == ProlificAction.Kind.APPROVE else {
        "action": "REJECT", "rejection_category": category, "message": message}
    try:
        client.submission_transition(sub.submission_id, body)
    except ProlificError as error:
        state = ProlificAction.State.SENDING if isinstance(error, ProlificUnavailable) else \
            ProlificAction.State.FAILED
        ProlificAction.objects.filter(pk=row.pk).update(state=state, error=error.message[:500])
        raise
    ProlificAction.objects.filter(pk=row.pk).update(state=ProlificAction.State.DONE, done_at=timezone.now())
    ProlificSubmission.objects.filter(pk=sub.pk).update(status="APPROVED" if kind == "approve" else "REJECTED")
    _mirror(sub, kind, message, by)


def _mirror(sub: ProlificSubmission, kind: str, message: str, by: User | None) -> None:
    """The participants table shows the decision made on Prolific (a new decision row when it differs)."""
    participation = sub.participation
    if participation is None:
        return
    latest = latest_decisions(participation.batch).get(participation.pk)
    if latest is None or latest.decision != kind:
        participant_decide(participation=participation, decision=kind, by=by,
                           reason=message or ("Approved on Prolific." if kind == ParticipantDecision.Decision.APPROVE
                                              else "Rejected on Prolific."))


# --- bonuses -------------------------------------------------------------------------------------------------


def _settle_sent(batch: Batch, client: ProlificClient, subs: dict[str, ProlificSubmission]) -> None:
    """Bonuses sent whose answer was never recorded: paid if Prolific lists a bonus on the submission; after the
    settle time with none listed, the payment never happened and the bonus goes back to be set up again."""
    settle = timedelta(minutes=settings.PROLIFIC_BONUS_SETTLE_MINUTES)
    for row in ProlificAction.objects.filter(batch=batch, kind=ProlificAction.Kind.BONUS,
                                             state=ProlificAction.State.SENDING):
        sub = subs.get(row.participant_id)
        paid = client.submission_get(sub.submission_id).get("bonus_payments") if sub is not None else None
        if paid:
            ProlificAction.objects.filter(pk=row.pk).update(state=ProlificAction.State.DONE, done_at=timezone.now())
        elif row.sent_at is None or row.sent_at < timezone.now() - settle:
            ProlificAction.objects.filter(pk=row.pk, state=ProlificAction.State.SENDING).update(
                state=ProlificAction.State.PENDING, bulk_id="")


def prolific_bonuses_pay(*, batch: Batch, by: User | None, dry_run: bool = True) -> Plan:
    """Pay the bonuses of the batch's rule to its approved participants, once each."""
    if not _bonus_source:
        raise Conflict(_("No bonus rule is available to pay from."))
    study = _study(batch)
    subs = _submissions(study, by)
    client = client_for(batch=batch, by=by)
    _settle_sent(batch, client, subs)
    rows = {r.participant_id: r for r in ProlificAction.objects.filter(batch=batch, kind=ProlificAction.Kind.BONUS)}
    plan = Plan(dry_run=dry_run)
    problems = []
    for pid, amount in sorted(_bonus_source[0](batch).items()):
        if amount <= 0:
            continue
        row = rows.get(pid)
        if row is not None and row.state == ProlificAction.State.DONE:
            plan.already.append(Line(pid, "bonus", row.amount, _("paid")))
        elif row is not None and row.state == ProlificAction.State.SENDING:
            plan.waiting.append(Line(pid, "bonus", row.amount, _("sent; Prolific has not listed it yet")))
        elif pid not in subs:
            problems.append((pid, _("Prolific lists no submission for this participant in the study")))
        else:
            amount = row.amount if row is not None and row.amount is not None else amount
            plan.send.append(Line(pid, "bonus", amount))
            plan.total += amount
    if problems:
        raise InvalidFields(problems)
    if dry_run or not plan.send:
        return plan
    for line in plan.send:
        try:
            ProlificAction.objects.get_or_create(
                key=_key(batch, line.participant_id, "bonus"),
                defaults={"batch": batch, "kind": ProlificAction.Kind.BONUS, "participant_id": line.participant_id,
                          "submission_id": subs[line.participant_id].submission_id, "amount": line.amount, "by": by})
        except IntegrityError:
            continue  # another request wrote it first: it goes its own way
    pending = list(ProlificAction.objects.filter(batch=batch, kind=ProlificAction.Kind.BONUS,
                                                 state=ProlificAction.State.PENDING))
    if pending:
        csv_bonuses = "".join(f"{r.participant_id},{r.amount:.2f}\n" for r in pending)
        answer = client.bonuses_set_up(study.prolific_id, csv_bonuses)
        ProlificAction.objects.filter(pk__in=[r.pk for r in pending], state=ProlificAction.State.PENDING).update(
            state=ProlificAction.State.SET_UP, bulk_id=str(answer["id"]))
        if answer.get("total_amount") is not None:
            plan.total_with_fees = (Decimal(str(answer["total_amount"])) / 100).quantize(Decimal("0.01"))
    for bulk_id in sorted(set(ProlificAction.objects.filter(
            batch=batch, kind=ProlificAction.Kind.BONUS, state=ProlificAction.State.SET_UP).values_list(
            "bulk_id", flat=True))):
        _pay(client, batch, bulk_id)
    return plan


def _pay(client: ProlificClient, batch: Batch, bulk_id: str) -> None:
    # Claim the set-up bonuses first (a conditional update: 0 rows means another worker is paying them), so a
    # rerun never pays the same bulk again; only then send the payment, then record it.
    claimed = ProlificAction.objects.filter(batch=batch, bulk_id=bulk_id, state=ProlificAction.State.SET_UP).update(
        state=ProlificAction.State.SENDING, sent_at=timezone.now())
    if not claimed:
        return
    try:
        client.bonuses_pay(bulk_id)
    except ProlificUnavailable:
        raise  # no answer: it may have been paid; the next run asks Prolific before anything else
    except ProlificError as error:  # an answer refusing it: nothing was paid
        ProlificAction.objects.filter(batch=batch, bulk_id=bulk_id, state=ProlificAction.State.SENDING).update(
            state=ProlificAction.State.SET_UP, error=error.message[:500])
        raise
    ProlificAction.objects.filter(batch=batch, bulk_id=bulk_id, state=ProlificAction.State.SENDING).update(
        state=ProlificAction.State.DONE, done_at=timezone.now(), error="")
