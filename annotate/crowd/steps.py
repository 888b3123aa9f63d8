"""A participant's answers to the steps around the items: the consent, the screening questions and the two
questionnaires. Each is accepted only at its stage (annotate.crowd.flow), once; a step a participant fails ends
their participation (annotate.crowd.ending). Screening answers are kept apart from the study's data
(ScreeningAnswer rows, never sessions or ratings).

Screening follows Prolific's comprehension-check rule: each question gets two tries. A wrong first try is told
"not quite, once more" without the answer; the explanation comes once the question is done with (right, or wrong
twice). The participant passes with ``screening_pass_mark`` questions right, and is screened out as soon as the
questions left cannot bring them there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from annotate.crowd.ending import participation_end
from annotate.crowd.flow import CONSENT, PRE_SURVEY, SCREENING, Where, participant_where, screening_state
from annotate.crowd.questions import survey_answers_clean
from annotate.errors import ApplicationError, Conflict
from annotate.models import CrowdStudy, Participation, ScreeningAnswer, SurveyResponse, User

PHASES = {PRE_SURVEY: SurveyResponse.Phase.PRE, "post_survey": SurveyResponse.Phase.POST}


def _at(user: User, stage: str) -> Where:
    where = participant_where(user)
    if where.stage != stage:
        raise Conflict(_("This step of the study is not the one you are at."), extra={"stage": where.stage})
    return where


def consent_answer(*, user: User, accept: bool) -> Where:
    """Accept the study's consent text (its version and the time are kept) or decline it (the participation
    ends, with the study's "no consent" code)."""
    where = _at(user, CONSENT)
    participation = where.participation
    if accept:
        Participation.objects.filter(pk=participation.pk, consented_at__isnull=True).update(
            consented_at=timezone.now(), consent_version=where.study.consent_version)
    else:
        participation_end(participation, Participation.End.NO_CONSENT)
    return participant_where(user)


@dataclass(frozen=True)
class ScreeningResult:
    question_id: str
    correct: bool
    tries_left: int  # on this question
    explanation: str  # shown once the question is done with, else ""
    passed: bool | None  # the screening's result once decided, else None


def screening_answer(*, user: User, question_id: str, answer: str) -> ScreeningResult:
    where = _at(user, SCREENING)
    participation, study = where.participation, where.study
    state = screening_state(participation, study)
    question = state.question
    if question is None or question_id != question["id"]:
        raise Conflict(_("This is not the screening question to answer now: reload the page."))
    if answer not in question["options"]:
        raise ApplicationError(_("Choose one of the options shown."), code="bad_answer")
    correct = answer == question["answer"]
    attempt = 3 - state.tries_left
    try:
        with transaction.atomic():
            ScreeningAnswer.objects.create(participation=participation, question=question["id"], attempt=attempt,
                                           answer=answer, correct=correct)
    except IntegrityError:  # the same try sent twice
        raise Conflict(_("This answer was already recorded: reload the page.")) from None
    done_with = correct or attempt >= 2
    passed = _screening_decide(participation, study) if done_with else None
    return ScreeningResult(question_id=question["id"], correct=correct, tries_left=0 if done_with else 1,
                           explanation=question["explanation"] if done_with else "", passed=passed)


def _screening_decide(participation: Participation, study: CrowdStudy) -> bool | None:
    """Passed once every question is done with and the right answers reach the pass mark, screened out once the
    questions left cannot bring them there; else None (more questions to answer)."""
    state = screening_state(participation, study)
    left = len(study.screening) - state.answered
    if state.right >= study.screening_pass_mark and left == 0:
        passed = True
    elif state.right + left < study.screening_pass_mark:
        passed = False
    else:
        return None
    Participation.objects.filter(pk=participation.pk, screened_at__isnull=True).update(
        screening_passed=passed, screening_score=state.right, screened_at=timezone.now())
    if not passed:
        participation_end(participation, Participation.End.SCREENED_OUT)
    return passed


def survey_submit(*, user: User, phase: str, answers: dict[str, Any]) -> Where:
    """The participant's answers to the questionnaire of this stage (``pre_survey`` or ``post_survey``), once."""
    if phase not in PHASES:
        raise ApplicationError(_("No such questionnaire."), code="bad_phase")
    where = _at(user, phase)
    questions = where.study.pre_survey if phase == PRE_SURVEY else where.study.post_survey
    clean = survey_answers_clean(questions, answers)
    participation = where.participation
    try:
        with transaction.atomic():
            SurveyResponse.objects.create(participation=participation, phase=PHASES[phase], answers=clean)
            field = "pre_survey_at" if phase == PRE_SURVEY else "post_survey_at"
            Participation.objects.filter(pk=participation.pk).update(**{field: timezone.now()})
    except IntegrityError:
        raise Conflict(_("You have already answered this questionnaire.")) from None
    return participant_where(user)
