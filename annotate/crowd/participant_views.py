"""The pages of an invited participant's study around the items: the way in (``/study/`` sends them to the step
they are at), the consent, the screening questions, the two questionnaires, leaving the study, and the page of
an ended participation. The completion page is annotate.crowd.views.done."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from annotate.crowd import steps
from annotate.crowd.ending import participant_return
from annotate.crowd.flow import (
    CONSENT,
    ENDED,
    FINISHED,
    ITEMS,
    POST_SURVEY,
    PRE_SURVEY,
    SCREENING,
    Where,
    participant_where,
    screening_state,
)
from annotate.errors import ApplicationError, InvalidFields
from annotate.models import ScreeningAnswer
from annotate.server.markdown import markdown_to_html

PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"
STEP_PAGES = {CONSENT: ("crowd-consent", ()), SCREENING: ("crowd-screening", ()), ITEMS: ("home", ()),
              PRE_SURVEY: ("crowd-survey", ("pre",)), POST_SURVEY: ("crowd-survey", ("post",)),
              FINISHED: ("crowd-done", ()), ENDED: ("crowd-study", ())}  # the end page is /study/ itself


def participant_page(view):
    """Signed in as an invited participant; anyone else gets the page saying this is for participants (404)."""
    @never_cache
    @login_required
    def page(request, *args, **kwargs):
        if request.user.crowd_batch_id is None:
            return render(request, "annotate/done.html", {"not_invited": True}, status=404)
        return view(request, *args, **kwargs)

    page.__name__ = page.__qualname__ = view.__name__
    page.__doc__ = view.__doc__
    return page


def platform_url(request, code: str) -> str:
    """The link back to Prolific with a code, for participants who came from Prolific."""
    return PROLIFIC_COMPLETE_URL.format(code=code) if code and "crowd_prolific" in request.session else ""


def _to_step(where: Where):
    name, args = STEP_PAGES[where.stage]
    return redirect(name, *args)


@participant_page
def study(request):
    """The way in: to the step the participant is at; the end page once their participation has ended."""
    where = participant_where(request.user)
    if where.stage != ENDED:
        return _to_step(where)
    return render(request, "annotate/crowd/ended.html", {
        "where": where, "reason": where.participation.end_reason, "code": where.code,
        "prolific_url": platform_url(request, where.code)})


@participant_page
@require_http_methods(["GET", "POST"])
def consent(request):
    where = participant_where(request.user)
    if where.stage != CONSENT:
        return _to_step(where)
    answer = request.POST.get("answer")
    if request.method == "POST" and answer in ("agree", "decline"):  # anything else: the page again, nothing decided
        steps.consent_answer(user=request.user, accept=answer == "agree")
        return redirect("crowd-study")
    return render(request, "annotate/crowd/consent.html", {
        "batch": where.participation.batch, "consent_html": markdown_to_html(where.study.consent_text)})


@participant_page
@require_http_methods(["GET", "POST"])
def screening(request):
    """A screening question; after an answer, what came of it (and the explanation once it is done with)."""
    user = request.user
    if request.method == "POST":
        question_id = request.POST.get("question", "")
        try:
            result = steps.screening_answer(user=user, question_id=question_id, answer=request.POST.get("answer", ""))
        except ApplicationError as error:
            if error.http_status == 409:
                return redirect("crowd-study")
            return _screening_page(request, participant_where(user), error=error.message, status=400)
        if result.tries_left:
            return redirect("crowd-screening")
        return redirect(f"{request.path}?answered={result.question_id}")
    where = participant_where(user)
    answered = request.GET.get("answered", "")
    if answered:  # the result of a question just done with, whatever came next (the next step, or the end)
        return _screening_result(request, where, answered)
    if where.stage != SCREENING:
        return _to_step(where)
    return _screening_page(request, where)


def _screening_page(request, where: Where, *, error: str = "", status: int = 200):
    if where.stage != SCREENING:
        return _to_step(where)
    state = screening_state(where.participation, where.study)
    return render(request, "annotate/crowd/screening.html", {
        "batch": where.participation.batch, "state": state, "question": state.question,
        "number": state.answered + 1, "total": len(where.study.screening), "error": error}, status=status)


def _screening_result(request, where: Where, question_id: str):
    question = next((q for q in where.study.screening if q["id"] == question_id), None)
    tries = list(ScreeningAnswer.objects.filter(participation=where.participation, question=question_id)
                 .order_by("attempt").values_list("correct", flat=True))
    if question is None or not (any(tries) or len(tries) >= 2):
        return redirect("crowd-study")
    return render(request, "annotate/crowd/screening_result.html", {
        "batch": where.participation.batch, "question": question, "right": any(tries), "explanation_html": markdown_to_html(question["explanation"])})


@participant_page
@require_http_methods(["GET", "POST"])
def survey(request, phase: str):
    stage = {"pre": PRE_SURVEY, "post": POST_SURVEY}.get(phase)
    where = participant_where(request.user)
    if stage is None or where.stage != stage:
        return _to_step(where)
    questions = where.study.pre_survey if stage == PRE_SURVEY else where.study.post_survey
    given, problems, status = {}, {}, 200
    if request.method == "POST":
        given = {q["id"]: request.POST.getlist(q["id"]) if q["type"] == "multiple" else request.POST.get(q["id"])
                 for q in questions}
        try:
            steps.survey_submit(user=request.user, phase=stage, answers=given)
        except InvalidFields as error:
            problems, status = dict(error.problems), 400
        except ApplicationError:
            return redirect("crowd-study")
        else:
            return redirect("crowd-study")
    return render(request, "annotate/crowd/survey.html", {
        "batch": where.participation.batch, "phase": phase, "fields": _fields(questions, given, problems),
        "problems": bool(problems)}, status=status)


def _fields(questions, given, problems) -> list[dict]:
    """Each question with what the participant gave (kept after an error) and what is wrong with it."""
    fields = []
    for question in questions:
        value = given.get(question["id"])
        chosen = value if isinstance(value, list) else [] if value is None else [value]
        fields.append({"q": question, "value": "" if value is None or isinstance(value, list) else value,
                       "chosen": [str(v) for v in chosen], "error": problems.get(question["id"], ""),
                       "points": [str(p) for p in range(1, (question.get("scale") or 0) + 1)]})
    return fields


@participant_page
@require_http_methods(["GET", "POST"])
def leave(request):
    """Leave (return) the study: the participation ends at once and the item they held goes to someone else."""
    where = participant_where(request.user)
    if where.stage in (FINISHED, ENDED):
        return redirect("crowd-study")
    if request.method == "POST":
        try:
            participant_return(user=request.user)
        except ApplicationError:
            pass  # finished or ended meanwhile: the study page says which
        return redirect("crowd-study")
    return render(request, "annotate/crowd/leave.html", {"batch": where.participation.batch})
