"""A batch's study settings for researchers (consent, screening, attention checks, questionnaires, time limit,
bonus rule) as a page and an API, over annotate.crowd.study (the ``study`` command and the import use the same)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import messages
from django.db.models import Q
from django.shortcuts import redirect, render
from django.utils.translation import gettext, gettext_lazy
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.crowd.attention import GOLD_CHECK_TYPES
from annotate.crowd.study import study_document, study_of, study_update
from annotate.errors import InvalidFields
from annotate.models import CrowdStudy, Task
from annotate.people.access import batch_for_researcher, researcher_required
from annotate.queue.gold import batch_check_supply
from annotate.server.api_schema import errors

JSON_FIELDS = ("screening", "pre_survey", "post_survey")
JSON_HELP = gettext_lazy("JSON: a list of questions, as docs/user-guide/researchers.md shows in its section "
                         "“Crowd studies”; empty for none.")


class StudyForm(forms.Form):
    consent = forms.CharField(label=gettext_lazy("Consent text (Markdown; empty: no consent step)"), required=False,
                              widget=forms.Textarea(attrs={"rows": 8}))
    no_consent_code = forms.CharField(label=gettext_lazy("Code for participants who decline"), required=False)
    screening = forms.CharField(label=gettext_lazy("Screening questions"), required=False, help_text=JSON_HELP,
                                widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}))
    screening_pass_mark = forms.CharField(label=gettext_lazy("Screening questions to get right (empty: all)"),
                                          required=False)
    screened_out_code = forms.CharField(label=gettext_lazy("Code for participants screened out"), required=False)
    attention_rate = forms.CharField(label=gettext_lazy("Attention checks: share of each person's items (0 to 1)"))
    max_attention_failures = forms.CharField(
        label=gettext_lazy("Failed attention checks that end a participation (empty: never)"), required=False)
    pre_survey = forms.CharField(label=gettext_lazy("Questionnaire before the first item"), required=False,
                                 help_text=JSON_HELP, widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}))
    post_survey = forms.CharField(label=gettext_lazy("Questionnaire after the last item"), required=False,
                                  help_text=JSON_HELP, widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}))
    time_limit_minutes = forms.CharField(label=gettext_lazy("Time limit in minutes from joining (empty: none)"),
                                         required=False)
    bonus_rule = forms.ChoiceField(label=gettext_lazy("Bonus rule"), choices=[
        ("none", gettext_lazy("No bonus")), ("per_item", gettext_lazy("Per completed item")),
        ("per_corrected_session", gettext_lazy("Per session the model was corrected in (round 1 or later)")),
        ("fixed", gettext_lazy("A fixed amount"))])
    bonus_amount = forms.CharField(label=gettext_lazy("Bonus amount (per unit, or fixed; the platform's currency)"),
                                   required=False)


def _initial(document: dict[str, Any]) -> dict[str, Any]:
    initial = {key: "" if value is None else value for key, value in document.items()}
    for key in JSON_FIELDS:
        initial[key] = json.dumps(document[key], ensure_ascii=False, indent=2) if document[key] else ""
    initial["screening_pass_mark"] = document["screening_pass_mark"] or ""
    return initial


def _settings(data: dict[str, Any]) -> dict[str, Any]:
    """The form's text as study settings: the JSON fields parsed (bad JSON is a problem named after its field)."""
    settings: dict[str, Any] = {key: data.get(key, "") for key in StudyForm.base_fields}
    problems = []
    for key in JSON_FIELDS:
        text = (settings[key] or "").strip()
        try:
            settings[key] = json.loads(text) if text else []
        except json.JSONDecodeError as error:
            problems.append((f"study.{key}", f"invalid JSON: {error.msg} (line {error.lineno})"))
    if problems:
        raise InvalidFields(problems)
    return settings


def _attach(form: StudyForm, error: InvalidFields) -> None:
    """Each problem at its field (``study.screening[1].answer`` at the screening box)."""
    for name, message in error.problems:
        key = name.removeprefix("study.").split("[")[0].split(".")[0]
        problem = f"{name.removeprefix('study.')}: {message}"
        form.add_error(key if key in form.fields else None, problem)


@researcher_required
def study_page(request, batch_id: int):
    batch = batch_for_researcher(request.user, batch_id)
    status = 200
    if request.method == "POST":
        form = StudyForm(request.POST)
        try:
            study_update(batch=batch, settings=_settings(request.POST), by=request.user)
        except InvalidFields as error:
            form.is_valid()
            _attach(form, error)
            status = 400
        else:
            messages.success(request, gettext("The study settings are saved."))
            return redirect("research-study", batch.pk)
    else:
        form = StudyForm(initial=_initial(study_document(batch)))
    gold = Task.objects.filter(batch=batch, is_gold=True)
    scored = (Q(answer_type=Task.AnswerType.MANUAL, metadata__gold_check_type__in=GOLD_CHECK_TYPES)
              | (~Q(answer_type=Task.AnswerType.MANUAL) & Q(metadata__has_key="gold_feedback_terms")))
    return render(request, "annotate/crowd/study.html", {
        "batch": batch, "form": form, "study": study_of(batch), "gold_tasks": gold.count(),
        "scored_gold_tasks": gold.filter(scored).count(), "supply": batch_check_supply(batch),
        "share": batch.items_per_participant,
    }, status=status)


EXAMPLE = {
    "consent": "You will judge an AI model's answers for about 20 minutes. Your answers are stored under a "
               "pseudonym.", "no_consent_code": "NOCONSENT",
    "screening": [{"id": "q1", "text": "May your feedback state the answer before the last round?",
                   "options": ["Yes", "No"], "answer": "No", "explanation": "The model must find it by itself."}],
    "screening_pass_mark": 1, "screened_out_code": "SCREENED", "attention_rate": 0.1, "max_attention_failures": 2,
    "pre_survey": [{"id": "english", "type": "likert", "text": "How fluent is your English?", "scale": 5,
                    "labels": ["Beginner", "Native"]}],
    "post_survey": [{"id": "comments", "type": "text", "text": "Anything to tell us?", "required": False}],
    "time_limit_minutes": 60, "bonus_rule": "per_corrected_session", "bonus_amount": "0.20",
}


class BatchStudyApi(APIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, **errors(403, 404, e404="No such batch, or not a member")},
                   tags=["research"], summary="The batch's study settings (consent, screening, attention checks, "
                                              "questionnaires, time limit, bonus rule)",
                   examples=[OpenApiExample("A study", value={**EXAMPLE, "consent_version": 1}, response_only=True)])
    def get(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        return Response(study_document(batch))

    @extend_schema(request=OpenApiTypes.OBJECT,
                   responses={200: OpenApiTypes.OBJECT, **errors(400, 403, 404, e404="No such batch, or not a member")},
                   tags=["research"], summary="Change study settings (keys left out keep their value)",
                   examples=[OpenApiExample("A study", value=EXAMPLE, request_only=True)])
    def patch(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        study: CrowdStudy = study_update(batch=batch, settings=request.data, by=request.user)
        return Response(study_document(batch, study))
