"""Where an invited participant stands in their study (Potato's flow: consent → instructions and
comprehension check → items → survey → code), read once for the pages, the API and the completion page.

The stages, in order: ``consent`` (a consent text to accept), ``screening`` (questions with a known answer, two
tries each), ``pre_survey``, ``items`` (the queue serves them their share), ``post_survey``, ``finished`` (the
completion code). ``ended``: declined, screened out, failed attention checks, returned, or past the time limit;
nothing more is served and their held items were freed. A study that asks nothing besides the items goes from
``items`` to ``finished`` as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotate.assignments import assignment_current
from annotate.crowd.ending import participation_check
from annotate.crowd.study import study_of
from annotate.models import Assignment, Batch, CrowdStudy, Participation, ProlificStudy, ScreeningAnswer, User
from annotate.participation import CONSENT, ENDED, PRE_SURVEY, SCREENING, held_back
from annotate.queue.services import nothing_to_serve, open_items_count
from annotate.shares import Share, participant_share

ITEMS, POST_SURVEY, FINISHED = "items", "post_survey", "finished"
__all__ = ["CONSENT", "ENDED", "FINISHED", "ITEMS", "POST_SURVEY", "PRE_SURVEY", "SCREENING", "STAGES", "ItemsProgress",
           "ScreeningState", "Where", "items_progress", "participant_where", "participation_of", "screening_state",
           "study_state"]
STAGES = (CONSENT, SCREENING, PRE_SURVEY, ITEMS, POST_SURVEY, FINISHED, ENDED)


@dataclass(frozen=True)
class ItemsProgress:
    """How far a participant is with their items (what the completion page says)."""

    share: Share | None
    current: Assignment | None  # the item under way
    remaining: int  # items they could still be served, capped by their share
    nothing_left: bool  # the queue has nothing more for them
    retry_after: int | None  # others hold what is left: ask again after this many seconds
    finished: bool  # their share is done: the study may go on to the post-study questionnaire, then the code


def items_progress(user: User, batch: Batch) -> ItemsProgress:
    share = participant_share(user, batch)
    current = assignment_current(annotator=user)
    remaining = open_items_count(annotator=user)
    # Nothing open to them: nothing more will come, or others hold what is left for now.
    empty = nothing_to_serve(annotator=user) if current is None and not remaining else None
    nothing_left = empty is not None and empty.state == "done"
    finished = share is not None and current is None and share.done(nothing_left=nothing_left)
    return ItemsProgress(share=share, current=current, remaining=remaining, nothing_left=nothing_left,
                         retry_after=empty.retry_after if empty is not None and not finished else None,
                         finished=finished)


@dataclass(frozen=True)
class Where:
    stage: str
    participation: Participation
    study: CrowdStudy
    items: ItemsProgress | None = None  # read at the items stage and after

    @property
    def code(self) -> str:
        """The code this participant may be shown now: the completion code once finished, the study's code for
        their end (declined, screened out; ended by attention checks: the code the batch's Prolific study was
        created with) once ended; else none."""
        if self.stage == FINISHED:
            return str(self.participation.batch.completion_code)
        if self.stage == ENDED:
            reason = str(self.participation.end_reason)
            if reason == Participation.End.ATTENTION:
                return _attention_code(self.participation.batch)
            codes: dict[str, str] = {Participation.End.NO_CONSENT: self.study.no_consent_code,
                                     Participation.End.SCREENED_OUT: self.study.screened_out_code}
            return codes.get(reason, "")
        return ""


def _attention_code(batch: Batch) -> str:
    """The FAILED_ATTENTION_CHECK code among those the batch's Prolific study was created with ("" without one), so
    a participant ended by attention checks can hand Prolific the code it maps to a review."""
    sent = ProlificStudy.objects.filter(batch=batch).values_list("completion_codes", flat=True).first() or []
    return next((str(c.get("code") or "") for c in sent
                 if isinstance(c, dict) and c.get("code_type") == "FAILED_ATTENTION_CHECK"), "")


def participation_of(user: User) -> Participation:
    """The participant's participation (made on first use for participants who joined before it was kept)."""
    if user.crowd_batch_id is None:
        raise ValueError("not an invited participant")
    try:
        return Participation.objects.select_related("batch").get(user=user)
    except Participation.DoesNotExist:
        try:
            with transaction.atomic():
                return Participation.objects.create(user=user, batch_id=user.crowd_batch_id)
        except IntegrityError:  # two first requests at once
            return Participation.objects.select_related("batch").get(user=user)


def participant_where(user: User, *, check: bool = True) -> Where:
    """The participant's stage. With ``check``, a participation past its time limit or its attention checks
    ends first (annotate.crowd.ending), and a first finish is recorded (the code is shown from then on)."""
    participation = participation_of(user)
    study = study_of(participation.batch)
    if check:
        participation_check(participation, study)
    if participation.finished_at is not None and participation.ended_at is None:
        # the code stays theirs, whatever the study asks of newcomers since
        return Where(FINISHED, participation, study, items_progress(user, participation.batch))
    before = held_back(participation, study)
    if before is not None:
        return Where(before, participation, study)
    items = items_progress(user, participation.batch)
    if participation.finished_at is None and not items.finished:
        return Where(ITEMS, participation, study, items)
    if study.post_survey and participation.post_survey_at is None:
        return Where(POST_SURVEY, participation, study, items)
    if participation.finished_at is None and check:
        Participation.objects.filter(pk=participation.pk, finished_at__isnull=True).update(finished_at=timezone.now())
        participation.refresh_from_db(fields=["finished_at"])
    return Where(FINISHED, participation, study, items)


@dataclass(frozen=True)
class ScreeningState:
    question: dict[str, Any] | None  # the question to answer now (None: every question is answered)
    tries_left: int  # on that question: 2, or 1 after a wrong first try (Prolific's two chances)
    answered: int  # questions done with (right, or wrong twice)
    right: int  # questions answered right (at the first or the second try)


def screening_state(participation: Participation, study: CrowdStudy) -> ScreeningState:
    tries: dict[str, list[bool]] = {}
    for question, correct in ScreeningAnswer.objects.filter(participation=participation).order_by(
            "attempt").values_list("question", "correct"):
        tries.setdefault(question, []).append(correct)
    answered = right = 0
    current = None
    for question in study.screening:
        given = tries.get(question["id"], [])
        if any(given) or len(given) >= 2:
            answered += 1
            right += int(any(given))
        elif current is None:
            current = question
    return ScreeningState(question=current, tries_left=2 - len(tries.get(current["id"], [])) if current else 0,
                          answered=answered, right=right)


def study_state(where: Where) -> dict[str, Any]:
    """The participant's view of their study for the API: the stage and what it asks now (never an answer)."""
    state: dict[str, Any] = {"stage": where.stage, "batch": where.participation.batch.name,
                             "code": where.code or None}
    study, participation = where.study, where.participation
    if where.stage == CONSENT:
        state["consent"] = {"text": study.consent_text, "version": study.consent_version}
    elif where.stage == SCREENING:
        screening = screening_state(participation, study)
        question = screening.question
        state["screening"] = {"question": None if question is None else {
            "id": question["id"], "text": question["text"], "options": question["options"]},
            "tries_left": screening.tries_left, "answered": screening.answered, "total": len(study.screening),
            "pass_mark": study.screening_pass_mark}
    elif where.stage in (PRE_SURVEY, POST_SURVEY):
        state["questions"] = study.pre_survey if where.stage == PRE_SURVEY else study.post_survey
    elif where.stage == ENDED:
        state["end_reason"] = participation.end_reason
    if where.items is not None and where.items.share is not None:
        share = where.items.share
        state["share"] = {"size": share.size, "completed": share.completed, "counted": share.counted,
                          "remaining": where.items.remaining}
    if study.time_limit_minutes and where.stage not in (FINISHED, ENDED):
        deadline = participation.started_at + timedelta(minutes=study.time_limit_minutes)
        state["deadline"] = deadline.isoformat()
    return state
