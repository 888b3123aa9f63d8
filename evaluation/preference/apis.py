"""Researcher API of preference reports (token or session auth): the whole report as JSON, and each table as a file.

Thin views; domain errors become 404/403/400 in annotate.errors.api_exception_handler.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.people.access import batch_for_researcher
from annotate.server.api_schema import file_download
from evaluation.exports.responses import (
    ERRORS,
    FileContentNegotiation,
    TableDocumentSerializer,
    export_response,
)
from evaluation.preference.reports import (
    PREFERENCE_FORMATS,
    PREFERENCE_TABLES,
    RAW_EXPORTS,
    preference_export,
    preference_report,
)


def _exports(batch_id: int) -> dict[str, list[str]]:
    """Each table in every format, and the raw judgments (per response; chosen/rejected pairs)."""
    tables = {name: [reverse("api-batch-preference-table", args=[batch_id, name, fmt]) for fmt in PREFERENCE_FORMATS]
              for name in PREFERENCE_TABLES}
    return {**tables, **{name: [reverse("api-batch-table", args=[batch_id, name, fmt]) for fmt in formats]
                         for name, formats in RAW_EXPORTS}}


class BatchPreferenceReportApi(APIView):
    @extend_schema(
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Preference batches: win/tie/loss and win rate (95% bootstrap CI) per model pair, rater agreement, "
                "mean candidate scores per model (JSON tables)",
        tags=["research"],
    )
    def get(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        report = preference_report(batch)
        return Response({**report.as_dict(), "exports": _exports(batch.id),
                         "page": reverse("research-preferences", args=[batch.id])})


class BatchPreferenceTableApi(APIView):
    content_negotiation_class = FileContentNegotiation

    @extend_schema(
        parameters=[
            OpenApiParameter("name", str, OpenApiParameter.PATH, enum=list(PREFERENCE_TABLES),
                             description="pairs (win/tie/loss per model pair), agreement, kappa, scores"),
            OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=list(PREFERENCE_FORMATS)),
        ],
        responses={**file_download("text/csv", "text/markdown", "application/x-tex"),
                   (200, "application/json"): TableDocumentSerializer, **ERRORS},
        summary="Download a table of a preference batch's report",
        tags=["research"],
    )
    def get(self, request, batch_id: int, name: str, fmt: str):
        batch = batch_for_researcher(request.user, batch_id)
        return export_response(request, preference_export(batch, name, fmt))
