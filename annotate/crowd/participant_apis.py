"""The participant's study through the API, as its pages do it: where they stand, the consent, the screening
questions, the questionnaires, leaving. For invited participants only (anyone else: 404)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.crowd import steps
from annotate.crowd.ending import participant_return
from annotate.crowd.flow import participant_where, study_state
from annotate.errors import NotFound
from annotate.server.api_schema import errors

ERRORS = errors(400, 403, 404, 409, e403="Not signed in", e404="You did not join a study through an invitation link",
                e409="Your study is at another step (the answer's `stage` says which), or this was answered already")


def _participant(request):
    user = request.user
    if not user.is_authenticated or user.crowd_batch_id is None:
        raise NotFound("You did not join a study through an invitation link.")
    return user


@extend_schema_field(OpenApiTypes.OBJECT)
class AnyObjectField(serializers.JSONField):
    pass


class StudyStateSerializer(serializers.Serializer):
    stage = serializers.ChoiceField(choices=["consent", "screening", "pre_survey", "items", "post_survey",
                                             "finished", "ended"])
    batch = serializers.CharField()
    code = serializers.CharField(allow_null=True, help_text="finished: the completion code; ended: the study's code "
                                                            "for that end (declined, screened out) if it set one")
    consent = AnyObjectField(required=False, help_text="consent: {text (Markdown), version}")
    screening = AnyObjectField(required=False, help_text="screening: {question: {id, text, options}, tries_left, "
                                                         "answered, total, pass_mark}")
    questions = serializers.ListField(child=AnyObjectField(), required=False,
                                      help_text="pre_survey, post_survey: the questions (annotate.crowd.questions)")
    end_reason = serializers.CharField(required=False, help_text="ended: no_consent, screened_out, attention, "
                                                                 "returned or timed_out")
    share = AnyObjectField(required=False, help_text="{size, completed, counted, remaining}")
    deadline = serializers.DateTimeField(required=False, help_text="The study's time limit runs out at")


class StudyStateApi(APIView):
    @extend_schema(responses={200: StudyStateSerializer, **ERRORS}, tags=["study"],
                   summary="Where the participant stands in their study, and what it asks now")
    def get(self, request):
        return Response(study_state(participant_where(_participant(request))))


class StudyConsentApi(APIView):
    class StudyConsentInputSerializer(serializers.Serializer):
        accept = serializers.BooleanField(help_text="true: I agree; false: I do not (the participation ends)")

    @extend_schema(request=StudyConsentInputSerializer, responses={200: StudyStateSerializer, **ERRORS}, tags=["study"],
                   summary="Accept or decline the study's consent")
    def post(self, request):
        user = _participant(request)
        data = self.StudyConsentInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(study_state(steps.consent_answer(user=user, accept=data.validated_data["accept"])))


class StudyScreeningApi(APIView):
    class StudyScreeningInputSerializer(serializers.Serializer):
        question = serializers.CharField(max_length=64, help_text="The id of the question asked now")
        answer = serializers.CharField(max_length=200, help_text="One of its options, as written")

    class StudyScreeningOutputSerializer(serializers.Serializer):
        correct = serializers.BooleanField()
        tries_left = serializers.IntegerField(help_text="1 after a wrong first try: answer the same question again")
        explanation = serializers.CharField(help_text="Once the question is done with (right, or wrong twice)")
        passed = serializers.BooleanField(allow_null=True, help_text="The screening's result once decided")
        state = StudyStateSerializer()

    @extend_schema(request=StudyScreeningInputSerializer, responses={200: StudyScreeningOutputSerializer, **ERRORS}, tags=["study"],
                   summary="Answer the screening question asked now (two tries each)")
    def post(self, request):
        user = _participant(request)
        data = self.StudyScreeningInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = steps.screening_answer(user=user, question_id=data.validated_data["question"],
                                        answer=data.validated_data["answer"])
        return Response({"correct": result.correct, "tries_left": result.tries_left,
                         "explanation": result.explanation, "passed": result.passed,
                         "state": study_state(participant_where(user))})


class StudySurveyApi(APIView):
    class StudySurveyInputSerializer(serializers.Serializer):
        answers = AnyObjectField(help_text="By question id: a point (likert), an option (single), a list of options "
                                           "(multiple), a number, a text; null or left out for an optional question")

    @extend_schema(request=StudySurveyInputSerializer, responses={200: StudyStateSerializer, **ERRORS}, tags=["study"],
                   summary="Answer the pre-study (pre) or post-study (post) questionnaire, once")
    def post(self, request, phase: str):
        user = _participant(request)
        if phase not in ("pre", "post"):
            raise NotFound("No such questionnaire: pre or post.")
        data = self.StudySurveyInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        where = steps.survey_submit(user=user, phase=f"{phase}_survey", answers=data.validated_data["answers"])
        return Response(study_state(where))


class StudyReturnApi(APIView):
    @extend_schema(request=None, responses={200: StudyStateSerializer, **ERRORS}, tags=["study"],
                   summary="Leave (return) the study: the item held goes back to the pool at once")
    def post(self, request):
        user = _participant(request)
        participant_return(user=user)
        return Response(study_state(participant_where(user)))
