"""Reviewer API: override a round's verdict (audited) and read a round's audit trail."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.review.selectors import round_overrides
from annotate.review.services import MAX_REASON_CHARS, round_override_verdict
from annotate.server.api_schema import errors


class OverrideOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    round_id = serializers.IntegerField()
    reviewer = serializers.CharField(source="reviewer.pseudonym", help_text="The reviewer's pseudonym")
    old_verdict = serializers.BooleanField(allow_null=True)
    new_verdict = serializers.BooleanField()
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()


class RoundVerdictOverrideApi(APIView):
    class InputSerializer(serializers.Serializer):
        correct = serializers.BooleanField(help_text="The model's answer in this round is correct")
        reason = serializers.CharField(max_length=MAX_REASON_CHARS, help_text="Why (kept in the audit trail)")

    class OutputSerializer(serializers.Serializer):
        override = OverrideOutputSerializer()
        session_id = serializers.IntegerField()
        corrected_round = serializers.IntegerField(allow_null=True)
        old_corrected_round = serializers.IntegerField(allow_null=True)
        truncated = serializers.BooleanField(
            help_text="The session ended before the last round and no round is correct now: counted as never"
        )

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, **errors(400, 403, 404, 409, 415)},
                   summary="Override a round's verdict (researchers who are batch members, admins)")
    def post(self, request, round_id: int):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = round_override_verdict(round_id=round_id, reviewer=request.user, **data.validated_data)
        body = {
            "override": result.override,
            "session_id": result.session.id,
            "corrected_round": result.session.corrected_round,
            "old_corrected_round": result.old_corrected_round,
            "truncated": result.truncated,
        }
        return Response(self.OutputSerializer(body).data, status=status.HTTP_201_CREATED)


class RoundOverridesApi(APIView):
    @extend_schema(responses={200: OverrideOutputSerializer(many=True), **errors(403, 404)}, summary="A round's verdict overrides, oldest first")
    def get(self, request, round_id: int):
        overrides = round_overrides(user=request.user, round_id=round_id)
        return Response(OverrideOutputSerializer(overrides, many=True).data)
