"""A bench run's own result table over the API (the batch's table export shows its latest finished run only)."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.views import APIView

from annotate.bench import selectors as bench_selectors
from annotate.models import BenchRun
from annotate.server.api_schema import errors, file_download
from evaluation.bench.tables import run_table
from evaluation.exports.renderers.tables import render
from evaluation.exports.responses import FileContentNegotiation, TableDocumentSerializer

RUN_TABLE_TYPES = {"csv": "text/csv; charset=utf-8", "md": "text/markdown; charset=utf-8",
                   "tex": "application/x-tex; charset=utf-8", "json": "application/json"}


def run_table_response(run, fmt: str) -> HttpResponse:
    """The run's table as a download: Tables 1/2, or a person's replayed feedback."""
    if fmt not in RUN_TABLE_TYPES:
        raise Http404(f"Unknown format {fmt!r}; expected one of {', '.join(RUN_TABLE_TYPES)}.")
    response = HttpResponse(render(run_table(run), fmt), content_type=RUN_TABLE_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="bench-run-{run.pk}-table.{fmt}"'
    return response


class BenchRunTableApi(APIView):
    content_negotiation_class = FileContentNegotiation

    @extend_schema(
        parameters=[OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=list(RUN_TABLE_TYPES))],
        responses={**file_download("text/csv", "text/markdown", "application/x-tex"),
                   (200, "application/json"): TableDocumentSerializer, **errors(403, 404)},
        summary="A bench run's result table: Tables 1/2, or per receiver the replayed person's feedback",
        tags=["research"],
    )
    def get(self, request, run_id: int, fmt: str):
        run = bench_selectors.readable_run(request.user, run_id)
        if run.protocol != BenchRun.Protocol.INTERFEEDBACK:
            raise Http404("FIRE runs' tables are the batch's fire-fixed / fire-free exports.")
        return run_table_response(run, fmt)
