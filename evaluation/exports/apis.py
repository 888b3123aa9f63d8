"""Researcher API of exports: any table or figure of a batch as a file, the sessions as JSON lines, and the
sessions export and the study bundle as background jobs with their file to download.

Thin views: parse filters, call the exports registry and jobs, answer. Domain errors (NotFound,
PermissionDenied, ApplicationError) become 404/403/400 in annotate.errors.api_exception_handler.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.jobs.serializers import JobSerializer
from annotate.people.access import batch_for_researcher
from annotate.server.api_schema import errors, file_download
from annotate.server.throttles import JobCreationThrottled
from evaluation.exports import jobs as export_jobs
from evaluation.exports import registry as exports
from evaluation.exports.filters import parse_filters
from evaluation.exports.responses import (
    ERRORS,
    FileContentNegotiation,
    TableDocumentSerializer,
    export_response,
    file_response,
)

FILTER_PARAMETERS = [
    OpenApiParameter("model", str, description="Model name (ModelConfig.name)"),
    OpenApiParameter("category", str, description="Task category"),
    OpenApiParameter("annotator", str, description="Annotator pseudonym"),
    OpenApiParameter("date_from", OpenApiTypes.DATE, description="Completed on or after (UTC, YYYY-MM-DD)"),
    OpenApiParameter("date_to", OpenApiTypes.DATE, description="Completed on or before (UTC, YYYY-MM-DD)"),
]



OUTCOME_PARAMETER = OpenApiParameter("outcome", str, enum=["0", "1", "2", "3", "never"],
                                     description="Corrected in this round (sessions only)")



FILE_RESPONSES = {
    **file_download("text/csv", "text/markdown", "application/x-tex", "image/png", "image/svg+xml",
                    "application/jsonl"),
    (200, "application/json"): TableDocumentSerializer,
    **ERRORS,
}



class BatchTableExportApi(APIView):
    content_negotiation_class = FileContentNegotiation

    @extend_schema(
        parameters=[
            OpenApiParameter("name", str, OpenApiParameter.PATH, enum=[n for n in exports.EXPORTS if n != "sessions"],
                             description="accuracy (Table 3), correction (Table 4), fig4, fig5, fire-ratings (FIRE "
                                         "Table A1), fire-summary-split|source|turn, fire-agreement, fire-kappa, "
                                         "fire-disagreements (FIRE rating batches), preference-pairs, "
                                         "preference-agreement, preference-kappa, preference-scores (preference "
                                         "batches' tables), preference-responses (every final judgment per "
                                         "response: jsonl, csv), preference-dpo (prompt/chosen/rejected pairs for "
                                         "reward-model training: jsonl), bench, fire-fixed, fire-free, costs"),
            OpenApiParameter("fmt", str, OpenApiParameter.PATH,
                             enum=["csv", "md", "tex", "json", "png", "svg", "jsonl"],
                             description="Tables: csv md tex json png svg; figures: png svg; preference-responses: "
                                         "jsonl csv; preference-dpo: jsonl"),
            *FILTER_PARAMETERS,
        ],
        responses=FILE_RESPONSES,
        summary="Download a table or figure",
        tags=["research"],
    )
    def get(self, request, batch_id: int, name: str, fmt: str):
        batch = batch_for_researcher(request.user, batch_id)
        return export_response(request, exports.build_export(batch, name, fmt, parse_filters(request.query_params)))



class BatchSessionExportApi(APIView):
    content_negotiation_class = FileContentNegotiation
    fmt = "jsonl"

    @extend_schema(
        parameters=[*FILTER_PARAMETERS, OUTCOME_PARAMETER],
        responses={**file_download("application/jsonl"), **ERRORS},
        summary="Completed sessions, one JSON line each with every round (annotators by pseudonym)",
        tags=["research"],
    )
    def get(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        exports.sessions_direct_check(batch, parse_filters(request.query_params))  # large: the export job
        export = exports.build_export(batch, "sessions", self.fmt, parse_filters(request.query_params))
        return export_response(request, export)



class BatchSessionFireExportApi(BatchSessionExportApi):
    fmt = "fire"

    @extend_schema(
        parameters=[*FILTER_PARAMETERS, OUTCOME_PARAMETER],
        responses={**file_download("application/jsonl"), **ERRORS},
        summary="Completed sessions as FIRE conversations (student = model, teacher = human), JSON lines",
        tags=["research"],
    )
    def get(self, request, batch_id: int):
        return super().get(request, batch_id)



FILTER_FIELDS = ("model", "category", "annotator", "date_from", "date_to", "outcome")



class BatchSessionsExportJobApi(JobCreationThrottled, APIView):
    @extend_schema_serializer(component_name="SessionsExportInput")
    class InputSerializer(serializers.Serializer):
        format = serializers.ChoiceField(choices=export_jobs.SESSION_FORMATS, default="jsonl",
                                         help_text="jsonl: session records; fire: FIRE conversations")
        gzip = serializers.BooleanField(default=False, help_text="Compress the file (.jsonl.gz)")
        model = serializers.CharField(required=False, allow_blank=True, help_text="Model name (ModelConfig.name)")
        category = serializers.CharField(required=False, allow_blank=True)
        annotator = serializers.CharField(required=False, allow_blank=True, help_text="Annotator pseudonym")
        date_from = serializers.CharField(required=False, allow_blank=True, help_text="YYYY-MM-DD (UTC)")
        date_to = serializers.CharField(required=False, allow_blank=True, help_text="YYYY-MM-DD (UTC)")
        outcome = serializers.ChoiceField(choices=["0", "1", "2", "3", "never"], required=False, allow_blank=True,
                                          help_text="Corrected in this round, or never")

    @extend_schema(
        request=InputSerializer,
        responses={202: JobSerializer, **ERRORS, **errors(415, 429)},
        summary="Export completed sessions as a background job (JSON lines, optionally gzip); poll the job's url, "
                "then download report.download_url",
        tags=["research"],
    )
    def post(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        # Options and filters in the body (JSON or form); the report's query string is accepted as well.
        body = request.data
        data = self.InputSerializer(data={**request.query_params.dict(), **body} if hasattr(body, "keys") else body)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        filters = parse_filters({key: values.get(key, "") for key in FILTER_FIELDS})
        job = export_jobs.sessions_export_job_create(batch=batch, user=request.user, filters=filters,
                                                     fmt=values["format"], compress=values["gzip"])
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED,
                        headers={"Location": reverse("api-job", args=[job.id])})



class BatchBundleExportJobApi(JobCreationThrottled, APIView):
    @extend_schema(
        request=None,
        responses={202: JobSerializer, **ERRORS, **errors(429)},
        summary="Build the study bundle (every table, figure and export, instructions, prompts, model settings, a "
                "README) as a zip in a background job; poll the job's url, then download report.download_url",
        tags=["research"],
    )
    def post(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        job = export_jobs.bundle_export_job_create(batch=batch, user=request.user)
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED,
                        headers={"Location": reverse("api-job", args=[job.id])})



class BatchExportDownloadApi(APIView):
    content_negotiation_class = FileContentNegotiation

    @extend_schema(
        responses={**file_download("application/jsonl", "application/gzip", "application/zip"),
                   **errors(403, 404, 409, 410, e404="No such export, or you may not read its batch",
                            e409="The export has not succeeded (yet)")},
        summary="Download the file of a finished export job (members of the batch and admins)",
        tags=["research"],
    )
    def get(self, request, batch_id: int, job_id: int):
        job = export_jobs.export_job_for_download(request.user, batch_id, job_id)
        return file_response(request, job.result_file.open("rb"), filename=export_jobs.download_filename(job),
                             content_type=export_jobs.content_type(job), size=job.result_file.size)
