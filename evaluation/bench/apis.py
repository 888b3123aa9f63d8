"""A run's own result tables over the API and as downloads (the batch's table export shows its latest finished run
unless given one): InterFeedback-Bench Tables 1/2 or a replayed person's feedback, FIRE Tables 2-3 or 4-5."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.views import APIView

from annotate.bench import selectors as bench_selectors
from annotate.server.api_schema import errors, file_download
from annotate.server.version import stamp
from evaluation.bench.registration import run_tables
from evaluation.exports.registry import render_tables
from evaluation.exports.renderers.tables import render
from evaluation.exports.responses import FileContentNegotiation, TableDocumentSerializer

RUN_TABLE_TYPES = {"csv": "text/csv; charset=utf-8", "md": "text/markdown; charset=utf-8",
                   "tex": "application/x-tex; charset=utf-8", "json": "application/json"}


def run_table_response(run, fmt: str) -> HttpResponse:
    """The run's tables as a download: Tables 1/2 or a person's replayed feedback (one table); FIRE's two tables
    one after another (JSON: a list), as the batch's fire-fixed / fire-free exports write them."""
    if fmt not in RUN_TABLE_TYPES:
        raise Http404(f"Unknown format {fmt!r}; expected one of {', '.join(RUN_TABLE_TYPES)}.")
    tables = run_tables(run)
    text = render_tables(tables, fmt) if isinstance(tables, list) else render(tables, fmt)
    response = HttpResponse(text, content_type=RUN_TABLE_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="bench-run-{run.pk}-table.{fmt}"'
    return stamp(response)


class BenchRunTableApi(APIView):
    content_negotiation_class = FileContentNegotiation

    @extend_schema(
        parameters=[OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=list(RUN_TABLE_TYPES))],
        responses={**file_download("text/csv", "text/markdown", "application/x-tex"),
                   (200, "application/json"): TableDocumentSerializer, **errors(403, 404)},
        summary="A run's result tables: Tables 1/2, per receiver the replayed person's feedback, or FIRE's Tables "
                "2-3 (fixed dialogues) or 4-5 (free dialogues; JSON: a list of tables)",
        tags=["research"],
    )
    def get(self, request, run_id: int, fmt: str):
        return run_table_response(bench_selectors.readable_run(request.user, run_id), fmt)
