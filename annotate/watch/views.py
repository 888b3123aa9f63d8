"""The live study dashboard: a page (numbers then kept fresh over the WebSocket) and the same snapshot as JSON."""

from __future__ import annotations

from django.shortcuts import render
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.people.access import batch_for_researcher, researcher_required
from annotate.server.api_schema import errors
from annotate.watch.plot import progress_svg
from annotate.watch.selectors import batch_dashboard


@researcher_required
def dashboard_page(request, batch_id: int):
    batch = batch_for_researcher(request.user, batch_id)
    snapshot = batch_dashboard(batch)
    return render(request, "annotate/dashboard.html", {
        "batch": batch, "dashboard": snapshot, "plot": progress_svg(snapshot),
    })


class BatchDashboardApi(APIView):
    @extend_schema(responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description=(
        "The dashboard snapshot: totals, by_model and by_category (needed / done / in_progress / left, in sessions "
        "or ratings: K per item), per_hour and cumulative completions over the last 24 h, pace_per_hour, "
        "eta_seconds, active_annotators, skips, leak_warnings, model_errors, queues (depth per model queue)")),
        **errors(403, 404, e404="No such batch, or not a member")},
        summary="A batch's live study dashboard (the page receives the same over its WebSocket)", tags=["research"])
    def get(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        return Response(batch_dashboard(batch))
