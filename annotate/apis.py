"""Thin DRF views: validate input, call a selector or a service, shape the output."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.selectors.batches import batch_by_name
from annotate.selectors.conversations import assignment_page_url
from annotate.selectors.sessions import access_session, session_for_annotator, session_snapshot
from annotate.services import queue as queue_services
from annotate.services import sessions as session_services

SnapshotSerializer = inline_serializer(
    name="SessionSnapshot",
    fields={
        "id": serializers.IntegerField(),
        "status": serializers.CharField(),
        "corrected_round": serializers.IntegerField(allow_null=True),
        "max_rounds": serializers.IntegerField(),
        "model": serializers.DictField(),
        "task": serializers.DictField(),
        "rounds": serializers.ListField(child=serializers.DictField()),
        "next_round": serializers.IntegerField(allow_null=True),
        "feedback_draft": serializers.CharField(),
        "ground_truth_revealed": serializers.BooleanField(),
        "ground_truth": serializers.CharField(required=False),
    },
)


def _snapshot_response(user, session_id: int, code=status.HTTP_200_OK) -> Response:
    return Response(session_snapshot(access_session(user, session_id)), status=code)


class SessionDetailApi(APIView):
    @extend_schema(responses=SnapshotSerializer, summary="A session's state (no ground truth before round 3)")
    def get(self, request, session_id: int):
        return _snapshot_response(request.user, session_id)


class SessionFeedbackApi(APIView):
    class SessionFeedbackInputSerializer(serializers.Serializer):
        feedback = serializers.CharField(allow_blank=True, max_length=session_services.MAX_FEEDBACK_CHARS)
        client_request_id = serializers.CharField(max_length=64)
        confirm_leak = serializers.BooleanField(default=False)
        typing_ms = serializers.IntegerField(required=False, min_value=0, allow_null=True)

    @extend_schema(request=SessionFeedbackInputSerializer, responses={201: SnapshotSerializer},
                   summary="Send feedback; the model re-answers (idempotent on client_request_id)")
    def post(self, request, session_id: int):
        data = self.SessionFeedbackInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        rnd, rounds = session_services.round_submit_feedback(session_id=session_id, annotator=request.user,
                                                             **data.validated_data)
        # The session and its rounds are at hand (locked and updated by the service): no second check or read.
        return Response(session_snapshot(rnd.session, rounds), status=status.HTTP_201_CREATED)


class SessionDraftApi(APIView):
    class SessionDraftInputSerializer(serializers.Serializer):
        draft = serializers.CharField(allow_blank=True, max_length=session_services.MAX_FEEDBACK_CHARS)

    @extend_schema(request=SessionDraftInputSerializer, responses={204: None}, summary="Autosave the feedback draft")
    def post(self, request, session_id: int):
        data = self.SessionDraftInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        session_services.session_save_draft(session_id=session_id, draft=data.validated_data["draft"],
                                            annotator=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionRetryApi(APIView):
    @extend_schema(request=None, responses=SnapshotSerializer, summary="Retry a failed model answer")
    def post(self, request, session_id: int):
        session_services.round_retry(session_id=session_id, annotator=request.user)
        return _snapshot_response(request.user, session_id)


class SessionVerdictApi(APIView):
    class SessionVerdictInputSerializer(serializers.Serializer):
        correct = serializers.BooleanField()

    @extend_schema(request=SessionVerdictInputSerializer, responses=SnapshotSerializer,
                   summary="Record the annotator's verdict on a manual task")
    def post(self, request, session_id: int):
        data = self.SessionVerdictInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        session_services.round_record_verdict(session_id=session_id, correct=data.validated_data["correct"],
                                              annotator=request.user)
        return _snapshot_response(request.user, session_id)


class NextItemApi(APIView):
    class NextItemInputSerializer(serializers.Serializer):
        batch = serializers.CharField(required=False, help_text="Batch name; any open batch when omitted")

    class NextItemOutputSerializer(serializers.Serializer):
        session_id = serializers.IntegerField(allow_null=True, help_text="null for a FIRE conversation")
        conversation_id = serializers.IntegerField(allow_null=True, help_text="set for a FIRE conversation")
        url = serializers.CharField()

    @extend_schema(request=NextItemInputSerializer, responses={200: NextItemOutputSerializer, 204: None},
                   summary="Reserve the next item (or resume the current one)")
    def post(self, request):
        data = self.NextItemInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        batch = None
        if data.validated_data.get("batch"):
            batch = batch_by_name(data.validated_data["batch"])
            if batch is None:
                return Response({"detail": f"No batch named {data.validated_data['batch']!r}."}, status=404)
        assignment = queue_services.assignment_next(annotator=request.user, batch=batch)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        conversation_id = assignment.work_item.conversation_id
        session_id = None if conversation_id else assignment.session.id
        return Response({"session_id": session_id, "conversation_id": conversation_id,
                         "url": assignment_page_url(assignment)})


class SessionHeartbeatApi(APIView):
    @extend_schema(request=None, responses={204: None}, summary="Keep the lease on this session's assignment")
    def post(self, request, session_id: int):
        session = session_for_annotator(request.user, session_id)
        if session.assignment_id:
            queue_services.assignment_renew(assignment=session.assignment)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionSkipApi(APIView):
    class SessionSkipInputSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=300, allow_blank=True)

    @extend_schema(request=SessionSkipInputSerializer, responses={204: None},
                   summary="Skip this item with a reason; it goes to other annotators")
    def post(self, request, session_id: int):
        data = self.SessionSkipInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        session = session_for_annotator(request.user, session_id)
        if session.assignment_id:
            queue_services.assignment_skip(assignment=session.assignment, reason=data.validated_data["reason"])
        return Response(status=status.HTTP_204_NO_CONTENT)
