"""Researcher API of a batch's participants: the table (with every decision, the audit trail), decisions, and
returns marked from a crowd platform's list. Their files (approvals.txt, bonuses.csv, participants and surveys as
csv or json) come from /api/batches/<id>/tables/<name>.<fmt> like every export."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.people.access import batch_for_researcher
from annotate.server.api_schema import errors
from evaluation.participants.selectors import participants_table
from evaluation.participants.services import (
    participants_decide,
    participants_mark_returned,
    suggestions_accept,
)

ERRORS = errors(400, 403, 404, e403="Not signed in, or not a researcher", e404="No such batch, or not a member")


class DecisionSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    reason = serializers.CharField(allow_blank=True)
    suggested = serializers.CharField(allow_blank=True, help_text="The app's suggestion when it was decided")
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True, default=None)
    decided_at = serializers.DateTimeField()


class ParticipantSerializer(serializers.Serializer):
    participant = serializers.CharField(source="pseudonym")
    participant_id = serializers.CharField(help_text="The platform's id (e.g. a Prolific PID); empty if none")
    state = serializers.CharField(help_text="consent, screening, pre_survey, items, post_survey, finished, or how "
                                            "it ended: no_consent, screened_out, attention, returned, timed_out")
    joined_at = serializers.DateTimeField(source="participation.started_at")
    consent_version = serializers.IntegerField(source="participation.consent_version", allow_null=True)
    consented_at = serializers.DateTimeField(source="participation.consented_at", allow_null=True)
    screening_score = serializers.IntegerField(source="participation.screening_score", allow_null=True)
    completed = serializers.IntegerField()
    corrected_sessions = serializers.IntegerField()
    minutes = serializers.FloatField(allow_null=True)
    attention_checks = serializers.IntegerField(source="quality.attention_checks", default=0)
    attention_failed = serializers.IntegerField(source="quality.attention_failed", default=0)
    gold_accuracy = serializers.FloatField(source="quality.gold_accuracy", allow_null=True, default=None)
    leak_warnings = serializers.IntegerField(source="quality.leak_warnings", default=0)
    flags = serializers.ListField(child=serializers.CharField())
    suggestion = serializers.CharField(help_text="approve, reject, or empty (none)")
    suggestion_reason = serializers.CharField()
    bonus = serializers.DecimalField(max_digits=12, decimal_places=2)
    decisions = DecisionSerializer(source="history", many=True,
                                   help_text="Newest first: the first is the one that counts")


def participants_api_rows(batch) -> list[dict]:
    """The table as the API and `participants --json` give it: each row with its every decision, newest first."""
    return ParticipantSerializer(participants_table(batch, with_history=True), many=True).data


class BatchParticipantsApi(APIView):
    @extend_schema(responses={200: ParticipantSerializer(many=True), **ERRORS}, tags=["research"],
                   summary="The batch's invited participants, with suggestions and every decision")
    def get(self, request, batch_id: int):
        return Response(participants_api_rows(batch_for_researcher(request.user, batch_id)))


class BatchParticipantDecisionsApi(APIView):
    class ParticipantDecisionsInputSerializer(serializers.Serializer):
        class ParticipantDecisionInputSerializer(serializers.Serializer):
            participant = serializers.CharField(help_text="Platform id or pseudonym")
            decision = serializers.ChoiceField(choices=["approve", "reject"])
            reason = serializers.CharField(required=False, allow_blank=True, default="",
                                           help_text="Needed to reject (the platform shows it to them)")

        decisions = ParticipantDecisionInputSerializer(many=True, required=False)
        accept_suggestions = serializers.BooleanField(
            required=False, default=False, help_text="Every undecided participant gets the suggested decision")

    class ParticipantDecisionsOutputSerializer(serializers.Serializer):
        decided = serializers.IntegerField()

    @extend_schema(request=ParticipantDecisionsInputSerializer, responses={200: ParticipantDecisionsOutputSerializer, **ERRORS}, tags=["research"],
                   summary="Approve or reject participants (each decision is kept: the latest counts)")
    def post(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        data = self.ParticipantDecisionsInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        decided = 0
        if data.validated_data.get("decisions"):
            decided += participants_decide(batch=batch, by=request.user, decisions=[
                (d["participant"], d["decision"], d["reason"]) for d in data.validated_data["decisions"]])
        if data.validated_data["accept_suggestions"]:
            decided += suggestions_accept(batch=batch, by=request.user)
        return Response({"decided": decided})


class BatchParticipantsReturnedApi(APIView):
    class ParticipantsReturnedInputSerializer(serializers.Serializer):
        participants = serializers.ListField(child=serializers.CharField(), allow_empty=False,
                                             help_text="Platform ids or pseudonyms the platform lists as returned")

    class ParticipantsReturnedOutputSerializer(serializers.Serializer):
        returned = serializers.IntegerField(help_text="Participations ended now (finished or ended ones are left)")

    @extend_schema(request=ParticipantsReturnedInputSerializer, responses={200: ParticipantsReturnedOutputSerializer, **ERRORS}, tags=["research"],
                   summary="Mark participants as returned: their participation ends, their items are freed at once")
    def post(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        data = self.ParticipantsReturnedInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response({"returned": participants_mark_returned(batch=batch, ids=data.validated_data["participants"],
                                                                by=request.user)})
