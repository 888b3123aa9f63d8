"""Thin DRF views: validate input, call a selector or a service, shape the output."""

from __future__ import annotations

import time

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.assignments import assignment_renew, assignment_skip
from annotate.errors import ApplicationError
from annotate.models import Round, Session, Task
from annotate.server.api_schema import UrlPathField, errors
from annotate.sessions import services as session_services
from annotate.sessions.selectors import access_session, session_for_annotator, session_snapshot
from annotate.sessions.stalls import session_for_page


class RoundOutputSerializer(serializers.Serializer):
    index = serializers.IntegerField(min_value=0)
    feedback_text = serializers.CharField(allow_blank=True)
    feedback_kind = serializers.ChoiceField(choices=Round.FeedbackKind.choices, allow_blank=True,
                                            help_text="Blank for round 0")
    leak_flagged = serializers.BooleanField()
    generation_status = serializers.ChoiceField(choices=Round.Generation.choices)
    answer_text = serializers.CharField(allow_blank=True)
    stream_seq = serializers.IntegerField(min_value=0)
    extracted_answer = serializers.CharField(allow_blank=True)
    verdict = serializers.BooleanField(allow_null=True)
    verdict_source = serializers.ChoiceField(choices=Round.VerdictSource.choices, allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    error_kind = serializers.ChoiceField(
        choices=["", "timed_out", "worker_stopped", "unavailable", "model"], allow_blank=True,
        help_text="Why the round failed: a fixed kind the page translates, or 'model' (the model's own error text)")
    latency_ms = serializers.IntegerField(allow_null=True)
    first_token_ms = serializers.IntegerField(allow_null=True)


@extend_schema_serializer(component_name="SessionSnapshot")
class SnapshotSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Session.Status.choices)
    corrected_round = serializers.IntegerField(allow_null=True)
    max_rounds = serializers.IntegerField()
    model = inline_serializer(name="SessionModel", fields={
        "name": serializers.CharField(), "label": serializers.CharField(allow_blank=True),
        "simulated": serializers.BooleanField()})
    task = inline_serializer(name="SessionTask", fields={
        "category": serializers.CharField(allow_blank=True),
        "question": serializers.CharField(allow_blank=True),
        "options": serializers.ListField(child=serializers.CharField(allow_blank=True)),
        "answer_type": serializers.ChoiceField(choices=Task.AnswerType.choices),
        "images": serializers.ListField(child=UrlPathField())})
    rounds = RoundOutputSerializer(many=True)
    next_round = serializers.IntegerField(allow_null=True)
    feedback_draft = serializers.CharField(allow_blank=True)
    ground_truth_revealed = serializers.BooleanField()
    ground_truth = serializers.CharField(required=False, allow_blank=True, help_text="Only once revealed")
    ended_as = serializers.ChoiceField(
        choices=["skipped", "expired", "returned", "timed_out", "attention"], required=False,
        help_text="An abandoned session: skipped, left until its lease ran out (expired), or freed by the end of the "
                  "participant's study (returned: they left it; timed_out: its time limit passed; attention: failed "
                  "attention checks)")
    finished_at = serializers.DateTimeField(
        required=False, allow_null=True,
        help_text="A finished session (completed, skipped or expired): when it ended; its page's timer stops there")
    judging_reference = serializers.CharField(required=False, allow_blank=True,
                                              help_text="Manual tasks before the reveal: the annotator's reference")


def _snapshot_response(user, session_id: int, code=status.HTTP_200_OK) -> Response:
    return Response(session_snapshot(access_session(user, session_id)), status=code)


class SessionDetailApi(APIView):
    @extend_schema(responses={200: SnapshotSerializer, **errors(403, 404)},
                   summary="A session's state (no ground truth before round 3)")
    def get(self, request, session_id: int):
        # The page polls this while the model answers: a round whose worker died is failed (with Retry) first.
        return Response(session_snapshot(session_for_page(request.user, session_id)))


@extend_schema_serializer(component_name="StatedAnswerWarning")
class StatedAnswerWarningSerializer(serializers.Serializer):
    """The feedback states an answer before the last round: nothing was sent. The page shows the warning; the
    annotator edits the feedback or sends it again with ``confirm_leak``. Right and wrong stated answers get the
    same answer, after the same time (LEAK_WARNING_MS)."""

    sent = serializers.BooleanField(help_text="Always false: the feedback was not sent")
    code = serializers.ChoiceField(choices=["ground_truth_leak"])
    detail = serializers.CharField(help_text="The warning, in words the annotator can act on")
    detected = serializers.ListField(child=serializers.CharField(),
                                     help_text="What the typed text states (never whether it is right)")


class SessionFeedbackApi(APIView):
    class SessionFeedbackInputSerializer(serializers.Serializer):
        feedback = serializers.CharField(allow_blank=True, max_length=session_services.MAX_FEEDBACK_CHARS)
        client_request_id = serializers.CharField(max_length=64)
        confirm_leak = serializers.BooleanField(default=False)
        typing_ms = serializers.IntegerField(required=False, min_value=0, allow_null=True)

    @extend_schema(request=SessionFeedbackInputSerializer,
                   responses={201: SnapshotSerializer,
                              200: OpenApiResponse(StatedAnswerWarningSerializer, description=(
                                  "Not sent: the feedback states an answer (a warning to show, not an error); "
                                  "send it again with confirm_leak to send it anyway")),
                              **errors(400, 403, 404, 409, 415)},
                   summary="Send feedback; the model re-answers (idempotent on client_request_id)")
    def post(self, request, session_id: int):
        started = time.monotonic()
        data = self.SessionFeedbackInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            rnd, rounds = session_services.round_submit_feedback(session_id=session_id, annotator=request.user,
                                                                 **data.validated_data)
        except ApplicationError as error:
            if error.code != "ground_truth_leak":
                raise
            # A warning, not an error: answered 200 with nothing sent, after the same time for every warning, right
            # or wrong, so neither the answer nor its timing tells which.
            time.sleep(max(0.0, settings.LEAK_WARNING_MS / 1000 - (time.monotonic() - started)))
            return Response({"sent": False, "code": error.code, "detail": error.message, **error.extra},
                            status=status.HTTP_200_OK)
        # The session and its rounds are at hand (locked and updated by the service): no second check or read.
        return Response(session_snapshot(rnd.session, rounds), status=status.HTTP_201_CREATED)


class SessionDraftApi(APIView):
    class SessionDraftInputSerializer(serializers.Serializer):
        draft = serializers.CharField(allow_blank=True, max_length=session_services.MAX_FEEDBACK_CHARS)

    @extend_schema(request=SessionDraftInputSerializer,
                   responses={204: None, **errors(400, 403, 404, 409, 415)},
                   summary="Autosave the feedback draft")
    def post(self, request, session_id: int):
        data = self.SessionDraftInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        session_services.session_save_draft(session_id=session_id, draft=data.validated_data["draft"],
                                            annotator=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionRetryApi(APIView):
    @extend_schema(request=None, responses={200: SnapshotSerializer, **errors(403, 404, 409)},
                   summary="Retry a failed model answer")
    def post(self, request, session_id: int):
        session_services.round_retry(session_id=session_id, annotator=request.user)
        return _snapshot_response(request.user, session_id)


class SessionVerdictApi(APIView):
    class SessionVerdictInputSerializer(serializers.Serializer):
        correct = serializers.BooleanField()

    @extend_schema(request=SessionVerdictInputSerializer,
                   responses={200: SnapshotSerializer, **errors(400, 403, 404, 409, 415)},
                   summary="Record the annotator's verdict on a manual task")
    def post(self, request, session_id: int):
        data = self.SessionVerdictInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        session_services.round_record_verdict(session_id=session_id, correct=data.validated_data["correct"],
                                              annotator=request.user)
        return _snapshot_response(request.user, session_id)




class SessionHeartbeatApi(APIView):
    @extend_schema(request=None, responses={204: None, **errors(403, 404)},
                   summary="Keep the lease on this session's assignment")
    def post(self, request, session_id: int):
        session = session_for_annotator(request.user, session_id)
        if session.assignment_id:
            assignment_renew(assignment=session.assignment)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionSkipApi(APIView):
    class SessionSkipInputSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=300, allow_blank=True)

    @extend_schema(request=SessionSkipInputSerializer,
                   responses={204: None, **errors(400, 403, 404, 409, 415)},
                   summary="Skip this item with a reason; it goes to other annotators")
    def post(self, request, session_id: int):
        data = self.SessionSkipInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        session = session_for_annotator(request.user, session_id)
        if session.assignment_id:
            assignment_skip(assignment=session.assignment, reason=data.validated_data["reason"])
        return Response(status=status.HTTP_204_NO_CONTENT)
