"""Batch import API (admins): multipart upload -> 202 with the import job; the job's status, progress, report."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.imports.batches import SETTING_KEYS
from annotate.imports.jobs import import_job_create
from annotate.imports.registry import IMPORTERS
from annotate.imports.selectors import import_job_get
from annotate.jobs.serializers import JobSerializer
from annotate.models import Job
from annotate.server.api_schema import UrlPathField, errors


class IsAdminRole(BasePermission):
    message = "Only admins may import batches."

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated and request.user.is_admin_role)


_ERRORS = errors(403, e403="Not signed in, or not an admin")


class ImportCreateApi(APIView):
    permission_classes = [IsAdminRole]
    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(help_text="tasks .jsonl / .zip, FIRE .json, or rows .csv / .parquet")
        images = serializers.FileField(required=False, help_text="FIRE / preference: the images zip for a JSON(L) file")
        name = serializers.CharField(max_length=128, help_text="Batch name; re-importing into it is idempotent")
        kind = serializers.ChoiceField(choices=sorted(IMPORTERS), default="interfeedback")
        models = serializers.CharField(required=False, allow_blank=True, help_text="ModelConfig names, a,b")
        overlap = serializers.IntegerField(required=False, min_value=1, max_value=100)
        max_rounds = serializers.IntegerField(required=False, min_value=1, max_value=10)
        gold_rate = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)
        prompt_templates = serializers.JSONField(required=False)
        allow_repeat_tasks = serializers.BooleanField(
            required=False, allow_null=True,
            help_text="Serve a task again to an annotator (another model) while they have not seen its answer")
        reasons_required = serializers.BooleanField(
            required=False, allow_null=True,
            help_text="Preference batches: a final save needs a reason for every candidate (default true)")
        researchers = serializers.CharField(required=False, allow_blank=True,
                                            help_text="Usernames who may read the batch (a,b), or * for every researcher")
        annotators = serializers.CharField(
            required=False, allow_blank=True,
            help_text="Usernames (a,b): only they are served the batch; * (or none given): everyone with the "
                      "annotator role who belongs to no other open batch")
        open_to_all_annotators = serializers.BooleanField(
            required=False, allow_null=True,
            help_text="Serve the batch to every annotator, also the people named on other batches (default false)")
        instructions = serializers.CharField(
            required=False, allow_blank=True, trim_whitespace=False,
            help_text="Markdown shown to annotators at the top of every item and on the batch's start page")
        category_order = serializers.CharField(
            required=False, allow_blank=True,
            help_text="Category names in the order of the report's columns (a,b); the rest follow as they first "
                      "appear in the file")
        budget = serializers.DecimalField(
            max_digits=12, decimal_places=2, required=False, allow_null=True, min_value=0,
            help_text="Model spending limit in the models' currency; once reached no new session starts")
        seed = serializers.IntegerField(
            required=False, min_value=0, max_value=2**31 - 1,
            help_text="Seed of the serving order (tasks, models per task, each annotator's turn of models); "
                      "a random one when not given. The same seed serves a study again in the same order")
        skips_count_toward_share = serializers.BooleanField(
            required=False, allow_null=True,
            help_text="Invited participants' skipped items count toward their share (at most max_counted_skips)")
        max_counted_skips = serializers.IntegerField(required=False, min_value=0, max_value=1000,
                                                     help_text="How many of a participant's skips count at most")
        study = serializers.JSONField(
            required=False, help_text="What invited participants are asked besides the items: consent, screening, "
                                      "attention checks, questionnaires, time limit, bonus rule (GET "
                                      "/api/batches/<id>/study/ shows the document)")
        map = serializers.CharField(required=False, allow_blank=True, help_text="rows: field=column,...")
        category = serializers.CharField(required=False, allow_blank=True, max_length=100)
        update = serializers.BooleanField(default=False)
        dry_run = serializers.BooleanField(default=False)

        class Meta:
            ref_name = "ImportCreateInput"  # nested "InputSerializer"s would collide in the OpenAPI schema

    @extend_schema(request={"multipart/form-data": InputSerializer},
                   responses={202: inline_serializer(name="ImportQueued", fields={
                       "job_id": serializers.IntegerField(), "status": serializers.ChoiceField(choices=Job.Status.choices),
                       "url": UrlPathField(), "page": UrlPathField()}),
                       **_ERRORS, **errors(400, 415, e400="Bad upload or settings: `problems` lists each one")},
                   summary="Upload a batch file; the import runs as a background job")
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        settings = {key: values[key] for key in SETTING_KEYS if values.get(key) not in (None, "")}
        if "budget" in settings:
            settings["budget"] = str(settings["budget"])  # kept as JSON in the import job
        job = import_job_create(
            upload=values["file"], name=values["name"], kind=values["kind"], created_by=request.user,
            settings=settings, options={"map": values.get("map"), "category": values.get("category")},
            update=values["update"], dry_run=values["dry_run"], images=values.get("images"),
        )
        return Response(
            {"job_id": job.pk, "status": job.status, "url": reverse("api-import-job", args=[job.pk]),
             "page": reverse("import-job", args=[job.pk])},
            status=status.HTTP_202_ACCEPTED,
        )


class ImportJobApi(APIView):
    permission_classes = [IsAdminRole]

    @extend_schema(responses={200: JobSerializer, **_ERRORS, **errors(404)}, summary="An import job: status, progress, and its report (counts, problems)")
    def get(self, request, job_id: int):
        return Response(JobSerializer(import_job_get(job_id)).data)
