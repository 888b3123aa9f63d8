"""API for model configs (list, create, edit, retire) and their "test this model" check.

Thin views: role check, selector or service, output. Researchers and admins read; only admins write. The serializers
check only the shape of the input; annotate.modelconfigs.services checks the rest and names each bad field (400). The check itself runs on a Celery worker (never in
the request); the API answers 202 with the job, to be polled at /api/jobs/<id>/.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.errors import PermissionDenied
from annotate.jobs.serializers import JobSerializer
from annotate.modelconfigs.check import model_config_check
from annotate.modelconfigs.selectors import model_config_get, model_configs_list
from annotate.modelconfigs.services import model_create, model_retire, model_update
from annotate.models import ModelConfig
from annotate.server.api_schema import errors
from annotate.server.throttles import JobCreationThrottled

TAGS = ["models"]


@extend_schema_serializer(component_name="ModelHealth")
class ModelHealthSerializer(serializers.Serializer):
    """The latest periodic probe and the circuit breaker (annotate.health); simulated and replay models are not
    probed."""

    probed_at = serializers.DateTimeField(allow_null=True, help_text="When the latest probe ended (null: none yet)")
    probe_latency_ms = serializers.IntegerField(allow_null=True, help_text="The latest probe's latency")
    probe_error = serializers.CharField(allow_blank=True, help_text="The latest probe's error; empty: it answered")
    available = serializers.SerializerMethodField(help_text="False while the breaker is open: rounds fail at once")
    unavailable_since = serializers.DateTimeField(allow_null=True)
    unavailable_reason = serializers.CharField(allow_blank=True)

    def get_available(self, config: ModelConfig) -> bool:
        return config.unavailable_since is None


@extend_schema_serializer(component_name="ModelConfig")
class ModelConfigSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="Slug used in URLs, queues and exports")
    display_name = serializers.CharField(allow_blank=True, help_text='Free name for tables and plots, e.g. "GPT-4o"')
    label = serializers.CharField(allow_blank=True, help_text="What pages show: display name, else name")
    backend = serializers.ChoiceField(choices=ModelConfig.Backend.choices)
    simulated = serializers.BooleanField(source="is_simulated")
    # Names of environment variables and paths only: a key is never stored in a config.
    backend_settings = serializers.JSONField()
    generation = serializers.JSONField()
    queue = serializers.CharField(source="queue_name")
    soft_time_limit = serializers.IntegerField()
    time_limit = serializers.IntegerField()
    input_price_per_million = serializers.DecimalField(max_digits=12, decimal_places=4, allow_null=True,
                                                       help_text="Price per million prompt tokens (null: no cost)")
    output_price_per_million = serializers.DecimalField(max_digits=12, decimal_places=4, allow_null=True,
                                                        help_text="Price per million completion tokens")
    max_concurrent_requests = serializers.IntegerField(allow_null=True, help_text="Calls at once (null: no limit)")
    requests_per_minute = serializers.IntegerField(allow_null=True, help_text="Calls started per minute")
    tokens_per_minute = serializers.IntegerField(allow_null=True, help_text="Prompt + completion tokens per minute")
    is_active = serializers.BooleanField()
    health = ModelHealthSerializer(source="*", read_only=True)


def _admin_only(request) -> None:
    if not request.user.is_admin_role:
        raise PermissionDenied("Only admins can create or change models.")


class ModelWriteSerializer(serializers.Serializer):
    """The fields an admin sets; the service checks names, settings and limits."""

    display_name = serializers.CharField(required=False, allow_blank=True, max_length=128, trim_whitespace=False)
    backend = serializers.ChoiceField(choices=ModelConfig.Backend.choices)
    backend_settings = serializers.DictField(required=False, help_text="e.g. base_url, model, api_key_env (a NAME)")
    generation = serializers.DictField(required=False, help_text="max_new_tokens, temperature, top_p, seed, stop")
    queue = serializers.CharField(required=False, allow_blank=True, max_length=64,
                                  help_text="Celery queue; blank = model.<backend>")
    soft_time_limit = serializers.IntegerField(required=False, min_value=1)
    time_limit = serializers.IntegerField(required=False, min_value=1)
    input_price_per_million = serializers.DecimalField(max_digits=12, decimal_places=4, required=False,
                                                       allow_null=True, min_value=0,
                                                       help_text="Price per million prompt tokens")
    output_price_per_million = serializers.DecimalField(max_digits=12, decimal_places=4, required=False,
                                                        allow_null=True, min_value=0,
                                                        help_text="Price per million completion tokens")
    max_concurrent_requests = serializers.IntegerField(required=False, allow_null=True, min_value=1,
                                                       help_text="Calls at once across all workers; null: no limit")
    requests_per_minute = serializers.IntegerField(required=False, allow_null=True, min_value=1,
                                                   help_text="Calls started per minute; null: no limit")
    tokens_per_minute = serializers.IntegerField(required=False, allow_null=True, min_value=1,
                                                 help_text="Prompt + completion tokens per minute; null: no limit")


class ModelListApi(APIView):
    OutputSerializer = ModelConfigSerializer

    @extend_schema_serializer(component_name="ModelCreateInput")
    class InputSerializer(ModelWriteSerializer):
        name = serializers.CharField(max_length=64, help_text="Slug: lower-case letters, digits, - and _")

    @extend_schema(
        parameters=[OpenApiParameter("active", bool, description="Only active configs")],
        responses={200: OutputSerializer(many=True), **errors(403, e403="Not a researcher or admin")},
        summary="Model configs (researchers and admins)", tags=TAGS,
    )
    def get(self, request):
        if not request.user.is_researcher_role:
            raise PermissionDenied("Only researchers and admins can list models.")
        active_only = request.query_params.get("active", "").lower() in ("1", "true", "yes")
        configs = model_configs_list(active_only=active_only)
        return Response(self.OutputSerializer(configs, many=True).data)

    @extend_schema(
        request=InputSerializer,
        responses={201: ModelConfigSerializer, **errors(400, 403, 415, e403="Not an admin")},
        summary="Create a model config (admins)", tags=TAGS,
    )
    def post(self, request):
        _admin_only(request)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        config = model_create(**data.validated_data)
        return Response(ModelConfigSerializer(config).data, status=status.HTTP_201_CREATED,
                        headers={"Location": reverse("api-model", args=[config.name])})


class ModelDetailApi(APIView):
    @extend_schema_serializer(component_name="ModelUpdateInput")
    class InputSerializer(ModelWriteSerializer):
        backend = serializers.ChoiceField(choices=ModelConfig.Backend.choices, required=False)
        is_active = serializers.BooleanField(required=False, help_text="false retires the model, true restores it")

    @extend_schema(responses={200: ModelConfigSerializer, **errors(403, 404, e403="Not a researcher or admin")},
                   summary="One model config (researchers and admins)", tags=TAGS)
    def get(self, request, name: str):
        if not request.user.is_researcher_role:
            raise PermissionDenied("Only researchers and admins can read models.")
        return Response(ModelConfigSerializer(model_config_get(name)).data)

    @extend_schema(request=InputSerializer,
                   responses={200: ModelConfigSerializer, **errors(400, 403, 404, 415, e403="Not an admin")},
                   summary="Edit a model config: only the fields sent change (admins)", tags=TAGS)
    def patch(self, request, name: str):
        _admin_only(request)
        config = model_config_get(name)
        data = self.InputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        if changes.get("is_active") is False:
            changes.pop("is_active")
            config = model_update(config=config, **changes) if changes else config
            config = model_retire(config=config)
        else:
            config = model_update(config=config, **changes)
        return Response(ModelConfigSerializer(config).data)


class ModelRetireApi(APIView):
    @extend_schema(request=None, responses={200: ModelConfigSerializer, **errors(403, 404, e403="Not an admin")},
                   summary="Retire a model: out of lists and imports, its sessions kept (admins)", tags=TAGS)
    def post(self, request, name: str):
        _admin_only(request)
        return Response(ModelConfigSerializer(model_retire(config=model_config_get(name))).data)


class ModelCheckApi(JobCreationThrottled, APIView):
    @extend_schema_serializer(component_name="ModelCheckInput")
    class InputSerializer(serializers.Serializer):
        image = serializers.BooleanField(default=True, help_text="Send the small test image (off for text-only models)")

    @extend_schema(
        request=InputSerializer,
        responses={202: JobSerializer, **errors(400, 403, 404, 415, 429, e403="Not an admin",
                                                      e404="No model config with this name")},
        summary="Test this model: queue one short prompt with an image on the model's queue (admins)", tags=TAGS,
    )
    def post(self, request, name: str):
        if not request.user.is_admin_role:
            raise PermissionDenied("Only admins can test models.")
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        config = model_config_get(name)
        job = model_config_check(config=config, created_by=request.user, with_image=data.validated_data["image"])
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED,
                        headers={"Location": reverse("api-job", args=[job.pk])})
