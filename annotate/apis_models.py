"""API for model configs and their "test this model" check, and for reading any job's status.

Thin views: role check, selector or service, output. The check itself runs on a Celery worker (never in
the request); the API answers 202 with the job, to be polled at /api/jobs/<id>/.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.errors import PermissionDenied
from annotate.selectors.jobs import job_for_user, job_is_finished
from annotate.selectors.model_configs import model_config_get, model_configs_list
from annotate.services.model_check import model_check_hint, model_config_check

TAGS = ["models"]


@extend_schema_serializer(component_name="Job")
class JobOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    status = serializers.CharField()
    done = serializers.SerializerMethodField()
    progress = serializers.FloatField()
    message = serializers.CharField()
    error = serializers.CharField()
    hint = serializers.SerializerMethodField(help_text="Why a job may look stuck (e.g. no worker on its queue)")
    params = serializers.JSONField()
    report = serializers.JSONField(help_text="For a model check: answer, time_to_first_token_ms, latency_ms, ...")
    url = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_done(self, job) -> bool:
        return job_is_finished(job)

    def get_hint(self, job) -> str:
        return model_check_hint(job) if job.kind == job.Kind.MODEL_CHECK else ""

    def get_url(self, job) -> str:
        return reverse("api-job", args=[job.pk])


class ModelListApi(APIView):
    # Named components: every API module nests classes called InputSerializer/OutputSerializer.
    @extend_schema_serializer(component_name="ModelConfig")
    class OutputSerializer(serializers.Serializer):
        name = serializers.CharField()
        label = serializers.CharField()
        backend = serializers.CharField()
        simulated = serializers.BooleanField(source="is_simulated")
        # Names of environment variables and paths only: a key is never stored in a config.
        backend_settings = serializers.JSONField()
        generation = serializers.JSONField()
        queue = serializers.CharField(source="queue_name")
        soft_time_limit = serializers.IntegerField()
        time_limit = serializers.IntegerField()
        is_active = serializers.BooleanField()

    @extend_schema(
        parameters=[OpenApiParameter("active", bool, description="Only active configs")],
        responses={200: OutputSerializer(many=True), 403: OpenApiResponse(description="Not a researcher or admin")},
        summary="Model configs (researchers and admins)", tags=TAGS,
    )
    def get(self, request):
        if not request.user.is_researcher_role:
            raise PermissionDenied("Only researchers and admins can list models.")
        active_only = request.query_params.get("active", "").lower() in ("1", "true", "yes")
        configs = model_configs_list(active_only=active_only)
        return Response(self.OutputSerializer(configs, many=True).data)


class ModelCheckApi(APIView):
    @extend_schema_serializer(component_name="ModelCheckInput")
    class InputSerializer(serializers.Serializer):
        image = serializers.BooleanField(default=True, help_text="Send the small test image (off for text-only models)")

    @extend_schema(
        request=InputSerializer,
        responses={202: JobOutputSerializer, 403: OpenApiResponse(description="Not an admin"),
                   404: OpenApiResponse(description="No model config with this name")},
        summary="Test this model: queue one short prompt with an image on the model's queue (admins)", tags=TAGS,
    )
    def post(self, request, name: str):
        if not request.user.is_admin_role:
            raise PermissionDenied("Only admins can test models.")
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        config = model_config_get(name)
        job = model_config_check(config=config, created_by=request.user, with_image=data.validated_data["image"])
        return Response(JobOutputSerializer(job).data, status=status.HTTP_202_ACCEPTED,
                        headers={"Location": reverse("api-job", args=[job.pk])})


class JobDetailApi(APIView):
    @extend_schema(
        responses={200: JobOutputSerializer, 403: OpenApiResponse(description="Not a researcher or admin"),
                   404: OpenApiResponse(description="No such job, or not yours")},
        summary="A job's status, progress and result (poll until done)", tags=["jobs"],
    )
    def get(self, request, job_id: int):
        return Response(JobOutputSerializer(job_for_user(request.user, job_id)).data)
