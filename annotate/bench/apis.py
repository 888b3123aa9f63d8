"""Bench runs over the API: start (POST /api/bench-runs/), list, read with progress, cancel, resume."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.bench import selectors, services
from annotate.models import BenchRun
from annotate.server.api_schema import errors
from annotate.server.throttles import JobCreationThrottled


class BenchRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    protocol = serializers.ChoiceField(choices=BenchRun.Protocol.choices)
    batch = serializers.CharField(source="batch.name")
    status = serializers.ChoiceField(choices=BenchRun.Status.choices)
    receivers = serializers.SerializerMethodField()
    providers = serializers.SerializerMethodField()
    feedback_kinds = serializers.ListField(child=serializers.CharField())
    max_rounds = serializers.IntegerField()
    lanes = serializers.IntegerField()
    provider_sees_ground_truth = serializers.BooleanField()
    regenerate_leaks = serializers.BooleanField()
    prompts = serializers.JSONField(help_text="The prompt templates each role was given (FIRE runs: and each "
                                              "model's generation settings)")
    ignored_ids = serializers.ListField(child=serializers.CharField(),
                                        help_text="FIRE: conversation ids the run's tables leave out")
    message = serializers.CharField()
    error = serializers.CharField()
    progress = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    table = serializers.SerializerMethodField(
        help_text="The run's result tables as JSON: Tables 1/2, for a replay of a person's feedback its own "
                  "table, for FIRE runs a list of their two tables")
    page = serializers.SerializerMethodField()

    def get_receivers(self, run) -> list[str]:
        return [m.name for m in selectors.run_receivers(run)]

    def get_providers(self, run) -> list[str]:
        return [m.name for m in selectors.run_providers(run)]

    def get_progress(self, run) -> services.BenchProgress:
        return services.bench_progress(run)

    def get_table(self, run) -> str:
        return reverse("api-bench-run-table", args=[run.pk, "json"])

    def get_page(self, run) -> str:
        return reverse("bench-run-page", args=[run.pk])


class BenchRunListApi(JobCreationThrottled, APIView):
    class InputSerializer(serializers.Serializer):
        protocol = serializers.ChoiceField(choices=BenchRun.Protocol.choices, default="interfeedback",
                                           help_text="FIRE runs: receivers are the students, providers the teachers")
        batch = serializers.CharField(help_text="The InterFeedback (or, for FIRE runs, FIRE) batch's name")
        receivers = serializers.CharField(required=False, allow_blank=True, default="", help_text="Model names, a,b")
        providers = serializers.CharField(required=False, allow_blank=True, default="",
                                          help_text="Model names, x,y (none with human_session)")
        human_session_id = serializers.IntegerField(
            required=False, allow_null=True, default=None,
            help_text="Replay this human session's feedback to the receivers instead of provider models")
        feedback = serializers.CharField(default="detail,simple", help_text="detail, simple or both")
        rounds = serializers.IntegerField(default=3, min_value=1, max_value=10)
        lanes = serializers.IntegerField(default=4, min_value=1, max_value=services.MAX_LANES)
        provider_sees_ground_truth = serializers.BooleanField(default=False)
        regenerate_leaks = serializers.BooleanField(default=True)
        n_max = serializers.IntegerField(default=5, min_value=1, max_value=20, help_text="FIRE free dialogues")
        threshold = serializers.IntegerField(default=8, min_value=0, max_value=10, help_text="FIRE free dialogues")
        baseline = serializers.CharField(default="", allow_blank=True, help_text="FIRE: the student whose AT is 1")
        ignored_ids = serializers.ListField(
            child=serializers.CharField(), default=list,
            help_text="FIRE: conversation ids the run's tables leave out (FIRE's data/ignore_ids.json)")
        provider_prompt = serializers.CharField(required=False, allow_blank=True,
                                                help_text="Replaces the provider's template ({question}, "
                                                          "{options}, {attempts}, {reference})")

        class Meta:
            ref_name = "BenchRunCreateInput"  # nested "InputSerializer"s would collide in the OpenAPI schema

    @extend_schema(responses={200: BenchRunSerializer(many=True), **errors(403)}, summary="Bench runs you may read")
    def get(self, request):
        runs = selectors.readable_runs(request.user)[:100]
        return Response(BenchRunSerializer(runs, many=True).data)

    @extend_schema(request=InputSerializer, responses={201: BenchRunSerializer, **errors(400, 403, 404, 429)},
                   summary="Start a bench run: every receiver x provider x feedback kind on the batch's tasks")
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        batch = selectors.readable_batch(request.user, name=values.pop("batch"))
        protocol = values.pop("protocol")
        fire = {key: values.pop(key) for key in ("n_max", "threshold", "baseline", "ignored_ids")}
        if protocol == BenchRun.Protocol.INTERFEEDBACK:
            run = services.bench_run_create(batch=batch, created_by=request.user, **values)
        else:
            run = services.fire_run_create(batch=batch, protocol=protocol, students=values["receivers"],
                                           teachers=values["providers"], lanes=values["lanes"],
                                           created_by=request.user, **fire)
        return Response(BenchRunSerializer(run).data, status=status.HTTP_201_CREATED)


class BenchRunDetailApi(APIView):
    @extend_schema(responses={200: BenchRunSerializer, **errors(403, 404)}, summary="A bench run and its progress")
    def get(self, request, run_id: int):
        return Response(BenchRunSerializer(selectors.readable_run(request.user, run_id)).data)


class BenchRunCancelApi(APIView):
    @extend_schema(request=None, responses={200: BenchRunSerializer, **errors(403, 404)}, summary="Cancel a run")
    def post(self, request, run_id: int):
        run = services.bench_run_cancel(run=selectors.readable_run(request.user, run_id))
        return Response(BenchRunSerializer(run).data)


class BenchRunResumeApi(JobCreationThrottled, APIView):
    @extend_schema(request=None, responses={200: BenchRunSerializer, **errors(403, 404, 409, 429)},
                   summary="Resume a run from what it has made (after a crash, a cancel or a failed call)")
    def post(self, request, run_id: int):
        run = services.bench_run_resume(run=selectors.readable_run(request.user, run_id))
        return Response(BenchRunSerializer(run).data)
