"""The Prolific study by API, over the same services as the pages: the study (read, create), its transitions and
places, the sync, decisions and bonuses (a dry run unless ``dry_run`` is false), and the calls made."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.errors import NotFound
from annotate.people.access import batch_for_researcher
from annotate.prolific import payments, selectors, studies
from annotate.prolific.sync import prolific_submissions_sync
from annotate.server.api_schema import errors

ERRORS = errors(400, 403, 404, e403="Not signed in, or not a researcher", e404="No such batch, or no Prolific study")


class StudySerializer(serializers.Serializer):
    prolific_id = serializers.CharField()
    status = serializers.CharField()
    name = serializers.CharField()
    places = serializers.IntegerField()
    reward_cents = serializers.IntegerField()
    total_cost_cents = serializers.IntegerField(allow_null=True)
    external_url = serializers.CharField()
    completion_codes = serializers.JSONField()
    synced_at = serializers.DateTimeField(allow_null=True)
    sync_error = serializers.CharField()


class CreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=255)
    internal_name = serializers.CharField(required=False, allow_blank=True, max_length=255)
    description = serializers.CharField()
    estimated_minutes = serializers.IntegerField()
    reward = serializers.DecimalField(max_digits=8, decimal_places=2)
    places = serializers.IntegerField(required=False, allow_null=True)
    attention_code = serializers.CharField(required=False, allow_blank=True, max_length=64)
    origin = serializers.URLField(required=False, help_text="The site's address (default: this request's)")


class ActionSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=["publish", "pause", "resume", "stop", "add_places", "refresh", "sync"])
    more = serializers.IntegerField(required=False, help_text="add_places: how many")


class DecisionSerializer(serializers.Serializer):
    participant_id = serializers.CharField()
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    rejection_category = serializers.ChoiceField(choices=list(payments.REJECTION_CATEGORIES), required=False,
                                                 allow_blank=True)
    message = serializers.CharField(required=False, allow_blank=True)


class PayInputSerializer(serializers.Serializer):
    decisions = DecisionSerializer(many=True, required=False)
    dry_run = serializers.BooleanField(default=True)


def plan_document(plan: payments.Plan) -> dict:
    def lines(rows):
        return [{"participant_id": r.participant_id, "kind": r.kind, "amount": str(r.amount) if r.amount is not None
                 else None, "note": r.note} for r in rows]
    return {"dry_run": plan.dry_run, "send": lines(plan.send), "already": lines(plan.already),
            "waiting": lines(plan.waiting), "total": str(plan.total),
            "total_with_fees": str(plan.total_with_fees) if plan.total_with_fees is not None else None}


def _study(batch):
    study = selectors.study_for_batch(batch)
    if study is None:
        raise NotFound("This batch has no Prolific study yet.")
    return study


class ProlificStudyApi(APIView):
    @extend_schema(responses={200: StudySerializer, **ERRORS}, tags=["research"], summary="The batch's Prolific study")
    def get(self, request, batch_id: int):
        return Response(StudySerializer(_study(batch_for_researcher(request.user, batch_id))).data)

    @extend_schema(request=CreateSerializer, responses={201: StudySerializer, **ERRORS}, tags=["research"],
                   summary="Create the batch's Prolific study as a draft")
    def post(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        data = CreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        given = dict(data.validated_data)
        study = studies.prolific_study_create(
            batch=batch, by=request.user, origin=given.pop("origin", f"{request.scheme}://{request.get_host()}"),
            **given)
        return Response(StudySerializer(study).data, status=status.HTTP_201_CREATED)


class ProlificStudyActionApi(APIView):
    @extend_schema(request=ActionSerializer, responses={200: StudySerializer, **ERRORS}, tags=["research"],
                   summary="Publish, pause, resume or stop the study; add places; refresh; read submissions")
    def post(self, request, batch_id: int):
        study = _study(batch_for_researcher(request.user, batch_id))
        data = ActionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        action = data.validated_data["action"]
        if action == "add_places":
            studies.prolific_study_add_places(study=study, more=data.validated_data.get("more", 0), by=request.user)
        elif action == "refresh":
            studies.prolific_study_refresh(study=study, by=request.user)
        elif action == "sync":
            prolific_submissions_sync(study=study, by=request.user)
            study.refresh_from_db()
        else:
            studies.prolific_study_transition(study=study, action=action, by=request.user)
        return Response(StudySerializer(study).data)


class ProlificDecisionsApi(APIView):
    @extend_schema(request=PayInputSerializer, responses={200: dict, **ERRORS}, tags=["research"],
                   summary="Approve or reject submissions on Prolific (a dry run unless dry_run is false)")
    def post(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        data = PayInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        decisions = [(d["participant_id"], d["decision"], d.get("rejection_category", ""), d.get("message", ""))
                     for d in data.validated_data.get("decisions", [])]
        return Response(plan_document(payments.prolific_decisions(batch=batch, decisions=decisions, by=request.user,
                                                          dry_run=data.validated_data["dry_run"])))


class ProlificBonusesApi(APIView):
    @extend_schema(request=PayInputSerializer, responses={200: dict, **ERRORS}, tags=["research"],
                   summary="Pay the bonuses of the batch's rule on Prolific, once each (a dry run unless asked)")
    def post(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        data = PayInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(plan_document(payments.prolific_bonuses_pay(batch=batch, by=request.user,
                                                            dry_run=data.validated_data["dry_run"])))
