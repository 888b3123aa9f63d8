"""Thin DRF views for FIRE conversation rating (and preference rating): read a conversation, save ratings, skip."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.assignments import assignment_renew
from annotate.models import Assignment
from annotate.rating import services as rating_services
from annotate.rating.fire import services as fire_services
from annotate.rating.preference import services as preference_services
from annotate.rating.selectors import (
    access_conversation,
    conversation_for_rating,
    conversation_payload,
)
from annotate.server.api_schema import UrlPathField, errors

ConversationSerializer = inline_serializer(
    name="ConversationForRating",
    fields={
        "id": serializers.IntegerField(),
        "external_id": serializers.CharField(),
        "batch": serializers.DictField(),
        "image": UrlPathField(allow_null=True, help_text="URL of the image, or null"),
        "question": serializers.CharField(),
        "ground_truth": serializers.CharField(help_text="FIRE raters see the ground truth"),
        "source": serializers.CharField(),
        "split": serializers.CharField(),
        "turns": serializers.ListField(
            child=serializers.DictField(),
            help_text="index (0-based, what a rating names), number (index + 1: the turn as the page and the "
                      "reports number it), role, kind, text, parts, is_rateable and (rateable turns) your rating",
        ),
        "can_rate": serializers.BooleanField(),
        "submitted": serializers.BooleanField(),
        "skipped": serializers.BooleanField(help_text="You skipped this conversation"),
        "criteria": serializers.DictField(),
        "scale": serializers.ListField(child=serializers.DictField()),
        "ranking": serializers.CharField(required=False, help_text="Preference batches only: your ranking"),
        "reasons_required": serializers.BooleanField(
            required=False, help_text="Preference batches only: a final save needs a reason for every candidate"),
        "judgments": serializers.ListField(
            child=serializers.DictField(), required=False,
            help_text="Preference batches, read by a researcher or admin: every rater's judgments (rater pseudonym, "
                      "ranking, final, and per candidate the three scores and the reason)"),
        "models": serializers.ListField(
            child=serializers.CharField(), required=False, allow_null=True,
            help_text="Preference batches, read by a researcher or admin: the model behind each candidate, when "
                      "the record named them (raters never see them)"),
    },
)

SavedSerializer = inline_serializer(
    name="RatingsSaved",
    fields={
        "conversation_id": serializers.IntegerField(),
        "saved": serializers.IntegerField(help_text="Rating rows written"),
        "final": serializers.BooleanField(),
        "replayed": serializers.BooleanField(help_text="A repeated final submit: nothing changed"),
    },
)

_ERRORS = errors(
    400, 403, 404, 409,
    e400="Bad input, e.g. a score outside 1-5 or an unscored turn on the final save",
    e403="Not signed in, or you may read this conversation but it is not assigned to you",
    e404="No such conversation, or not yours",
    e409="You already submitted ratings for this conversation",
)


def viewer_payload(conversation, user, assignment) -> dict:
    """The conversation as its viewer sees it; a conversation the viewer skipped is read-only."""
    payload = conversation_payload(conversation, viewer=user, assignment=assignment)
    payload["skipped"] = assignment is not None and assignment.status == Assignment.Status.SKIPPED
    if payload["skipped"]:
        payload["can_rate"] = False
    return payload


def _saved(result) -> Response:
    return Response(
        {"conversation_id": result.conversation_id, "saved": result.saved, "final": result.final,
         "replayed": result.replayed},
        status=status.HTTP_200_OK,
    )


class ConversationDetailApi(APIView):
    @extend_schema(responses={200: ConversationSerializer, **errors(403, 404)},
                   summary="A conversation to rate, with your own ratings so far")
    def get(self, request, conversation_id: int):
        conversation, assignment = access_conversation(request.user, conversation_id)
        return Response(viewer_payload(conversation, request.user, assignment))


class ConversationRatingsApi(APIView):
    class RatingSerializer(serializers.Serializer):
        turn = serializers.IntegerField(min_value=0, help_text="Turn index in the conversation (0-based)")
        score = serializers.IntegerField(min_value=1, max_value=5, allow_null=True, required=False, default=None)
        comment = serializers.CharField(allow_blank=True, required=False, default="",
                                        max_length=rating_services.MAX_COMMENT_CHARS)

    class InputSerializer(serializers.Serializer):
        ratings = serializers.ListField(child=serializers.DictField(), allow_empty=True)
        final = serializers.BooleanField(default=False, help_text="True: 'Save scores and next'; false: a draft")
        client_request_id = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")

        def validate_ratings(self, value):
            rows = []
            for position, raw in enumerate(value):
                row = ConversationRatingsApi.RatingSerializer(data=raw)
                if not row.is_valid():
                    raise serializers.ValidationError({position: row.errors})
                rows.append(row.validated_data)
            turns = [row["turn"] for row in rows]
            if len(set(turns)) != len(turns):
                raise serializers.ValidationError("Each turn may appear only once.")
            return rows

    @extend_schema(
        request=inline_serializer(name="RatingsInput", fields={
            "ratings": serializers.ListField(child=RatingSerializer()),
            "final": serializers.BooleanField(default=False),
            "client_request_id": serializers.CharField(required=False),
        }),
        responses={200: SavedSerializer, **_ERRORS, **errors(415)},
        summary="Save your 1-5 ratings of a conversation's turns (draft, or final: all turns, then next)",
    )
    def post(self, request, conversation_id: int):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        conversation_for_rating(request.user, conversation_id)
        result = fire_services.ratings_save(
            annotator=request.user,
            conversation_id=conversation_id,
            scores={row["turn"]: (row["score"], row["comment"]) for row in data.validated_data["ratings"]},
            client_request_id=data.validated_data["client_request_id"],
            final=data.validated_data["final"],
        )
        return _saved(result)


class ConversationPreferencesApi(APIView):
    class CandidateSerializer(serializers.Serializer):
        turn = serializers.IntegerField(min_value=0)
        helpfulness = serializers.IntegerField(min_value=1, max_value=5, allow_null=True, required=False)
        faithfulness = serializers.IntegerField(min_value=1, max_value=5, allow_null=True, required=False)
        ethics = serializers.IntegerField(min_value=1, max_value=5, allow_null=True, required=False)
        reason = serializers.CharField(allow_blank=True, required=False,
                                       max_length=rating_services.MAX_COMMENT_CHARS)

    class InputSerializer(serializers.Serializer):
        ratings = serializers.ListField(child=serializers.DictField(), allow_empty=True)
        ranking = serializers.CharField(allow_blank=True, required=False, default="", max_length=200,
                                        help_text="Candidates best first, ties with '=': 1>2=3")
        final = serializers.BooleanField(default=False)
        client_request_id = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")

        def validate_ratings(self, value):
            rows = []
            for position, raw in enumerate(value):
                row = ConversationPreferencesApi.CandidateSerializer(data=raw)
                if not row.is_valid():
                    raise serializers.ValidationError({position: row.errors})
                rows.append(row.validated_data)
            return rows

    @extend_schema(
        request=inline_serializer(name="PreferenceInput", fields={
            "ratings": serializers.ListField(child=CandidateSerializer()),
            "ranking": serializers.CharField(required=False),
            "final": serializers.BooleanField(default=False),
            "client_request_id": serializers.CharField(required=False),
        }),
        responses={200: SavedSerializer, **_ERRORS, **errors(415)},
        summary="Preference batches: helpfulness/faithfulness/ethics per candidate and a ranking with ties",
    )
    def post(self, request, conversation_id: int):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        conversation_for_rating(request.user, conversation_id)
        result = preference_services.preference_save(
            annotator=request.user,
            conversation_id=conversation_id,
            ratings={row.pop("turn"): row for row in data.validated_data["ratings"]},
            ranking=data.validated_data["ranking"],
            client_request_id=data.validated_data["client_request_id"],
            final=data.validated_data["final"],
        )
        return _saved(result)


class ConversationHeartbeatApi(APIView):
    @extend_schema(request=None, responses={204: None, **_ERRORS},
                   summary="Keep the lease on your assignment of this conversation")
    def post(self, request, conversation_id: int):
        _, assignment = conversation_for_rating(request.user, conversation_id)
        assignment_renew(assignment=assignment)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ConversationSkipApi(APIView):
    class ConversationSkipInputSerializer(serializers.Serializer):
        # Blank passes here so the service answers with its own message ("Say why you skip ...").
        reason = serializers.CharField(allow_blank=True, max_length=rating_services.MAX_SKIP_REASON_CHARS,
                                       help_text="Why you skip it, e.g. 'the image does not load'")

    @extend_schema(
        request=ConversationSkipInputSerializer,
        responses={204: None, **_ERRORS,
                   **errors(400, 415, e400="No reason given, or a reason over 300 characters")},
        summary="Skip this conversation with a reason; it goes to other annotators, never back to you",
    )
    def post(self, request, conversation_id: int):
        data = self.ConversationSkipInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        conversation_for_rating(request.user, conversation_id)
        rating_services.conversation_skip(annotator=request.user, conversation_id=conversation_id,
                                          reason=data.validated_data["reason"])
        return Response(status=status.HTTP_204_NO_CONTENT)
