"""The one serializer of a Job row."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from annotate.jobs.selectors import job_hint, job_is_finished
from annotate.models import Job
from annotate.server.api_schema import UrlPathField


@extend_schema_serializer(component_name="Job")
class JobSerializer(serializers.Serializer):
    """Every job kind, everywhere (imports, recounts, exports, model checks): one shape."""

    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=Job.Kind.choices)
    status = serializers.ChoiceField(choices=Job.Status.choices)
    done = serializers.SerializerMethodField()
    progress = serializers.FloatField()
    message = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    hint = serializers.SerializerMethodField(help_text="Why a job may look stuck (e.g. no worker on its queue)")
    params = serializers.SerializerMethodField(
        help_text="What the job was asked to do (for an import: name, kind, filename, dry_run, update; for a model "
                  "check: the model and its queue); never where the server keeps an upload")
    batch = serializers.SerializerMethodField(help_text="The batch's name, once the job has one")
    report = serializers.JSONField(help_text="What the job found: an import's counts, problems and warnings; a model "
                                             "check's answer and latencies; an export's file and session count")
    url = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field(serializers.JSONField())
    def get_params(self, job) -> dict:
        params = {key: value for key, value in (job.params or {}).items() if key != "path"}
        if isinstance(params.get("options"), dict):
            params["options"] = {k: v for k, v in params["options"].items() if k != "images"}
        return params

    def get_done(self, job) -> bool:
        return job_is_finished(job)

    def get_batch(self, job) -> str | None:
        return job.batch.name if job.batch_id else None

    def get_hint(self, job) -> str:
        return job_hint(job)

    @extend_schema_field(UrlPathField())
    def get_url(self, job) -> str:
        return reverse("api-job", args=[job.pk])
