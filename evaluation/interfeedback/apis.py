"""Researcher API (token or session auth): batches, reports, sessions, recompute jobs (exports: evaluation/exports/apis.py).

Thin views: parse filters, call selectors/services/exports, shape the output. Domain errors (NotFound,
PermissionDenied, ApplicationError) become 404/403/400 in annotate.errors.api_exception_handler.
"""

from __future__ import annotations

import json

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.costs import batch_costs, budget_message
from annotate.errors import PermissionDenied
from annotate.jobs.serializers import JobSerializer
from annotate.models import Batch
from annotate.server.api_schema import UrlPathField, errors
from annotate.server.throttles import JobCreationThrottled
from evaluation.exports import registry as exports
from evaluation.exports.apis import FILTER_PARAMETERS, OUTCOME_PARAMETER
from evaluation.exports.filters import parse_filters
from evaluation.exports.renderers.tables import to_json
from evaluation.exports.responses import (
    ERRORS,
)
from evaluation.interfeedback import selectors, services
from evaluation.interfeedback.metrics import FEEDBACK_ROUNDS, accuracy, correction_rate
from evaluation.stats import percent


def _researcher_batch(request, batch_id: int):
    return selectors.batch_for_researcher(request.user, batch_id)


def _counts_payload(counts) -> dict:
    return {
        "sessions": counts.sessions,
        "corrected": {f"round_{k}": n for k, n in enumerate(counts.corrected)} | {"never": counts.never},
        "accuracy": _number(percent(accuracy(counts))),
        "correction_rate": {f"round_{k}": _number(percent(correction_rate(counts, k))) for k in FEEDBACK_ROUNDS},
    }


def _number(value):
    return None if value is None else float(value)


class BatchListApi(APIView):
    @extend_schema_serializer(component_name="ResearchBatch")  # nested names must be unique in the schema
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        name = serializers.CharField()
        kind = serializers.ChoiceField(choices=Batch.Kind.choices)
        status = serializers.ChoiceField(choices=Batch.Status.choices)
        task_count = serializers.IntegerField()
        sessions_counted = serializers.IntegerField()
        report_url = UrlPathField()

    pagination_class = PageNumberPagination  # read by the schema generator too: the list is documented as pages

    @extend_schema(responses={200: OutputSerializer(many=True), **errors(403, 404, e404="No such page")},
                   summary="Batches you can read (admins: all)", tags=["research"])
    def get(self, request):
        if not request.user.is_researcher_role:
            raise PermissionDenied("Only researchers and admins can read reports.")
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(selectors.batches_for_researcher(request.user), request, view=self)
        rows = [
            {"id": b.id, "name": b.name, "kind": b.kind, "status": b.status, "task_count": b.task_count,
             "sessions_counted": b.sessions_counted, "report_url": reverse("api-batch-report", args=[b.id])}
            for b in page
        ]
        return paginator.get_paginated_response(self.OutputSerializer(rows, many=True).data)


class BatchReportApi(APIView):
    @extend_schema(
        parameters=FILTER_PARAMETERS,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        summary="Table 3 and Table 4 (as JSON tables), counts per model x category, per-annotator breakdown",
        tags=["research"],
    )
    def get(self, request, batch_id: int):
        batch = _researcher_batch(request, batch_id)
        filters = parse_filters(request.query_params)
        report = selectors.batch_report(batch, filters)
        aggregate = selectors.aggregate_of(batch)
        return Response({
            "batch": {"id": batch.id, "name": batch.name, "kind": batch.kind},
            "filters": filters.query_params(),
            "sessions": report.sessions,
            "updated_at": aggregate.updated_at if aggregate else None,
            "recomputed_at": aggregate.recomputed_at if aggregate else None,
            "tables": {"accuracy": json.loads(to_json(report.accuracy)),
                       "correction": json.loads(to_json(report.correction))},
            "cells": [{"model": model, "category": category, **_counts_payload(counts)}
                      for (model, category), counts in report.counts.items()],
            "annotators": [{"annotator": row.pseudonym, **_counts_payload(row.counts)} for row in report.annotators],
            "costs": [{"model": c.model, "name": c.slug, "rounds": c.rounds,
                       "rounds_without_usage": c.rounds_without_usage, "prompt_tokens": c.prompt_tokens,
                       "completion_tokens": c.completion_tokens, "cost": None if c.cost is None else str(c.cost)}
                      for c in batch_costs(batch)],
            "budget": {"budget": None if batch.budget is None else str(batch.budget),
                       "reached": batch.budget_reached, "message": budget_message(batch)},
            "exports": {name: [reverse("api-batch-table", args=[batch.id, name, fmt]) for fmt in formats]
                        for name, formats in exports.EXPORTS.items() if name != "sessions"}
            | {"sessions": [reverse("api-batch-sessions-jsonl", args=[batch.id]),
                            reverse("api-batch-sessions-fire", args=[batch.id])]},
        })


class BatchSessionListApi(APIView):
    @extend_schema_serializer(component_name="ResearchSessionRow")
    class OutputSerializer(serializers.Serializer):
        session_id = serializers.IntegerField()
        task = serializers.CharField(source="session.task.external_id")
        category = serializers.CharField()
        model = serializers.CharField(source="model_config.name")
        annotator = serializers.CharField(source="annotator.pseudonym", allow_null=True)
        corrected_round = serializers.SerializerMethodField()
        completed_at = serializers.DateTimeField()
        url = serializers.SerializerMethodField()

        def get_corrected_round(self, row) -> int | None:
            return None if row.corrected_round < 0 else row.corrected_round

        @extend_schema_field(UrlPathField())
        def get_url(self, row) -> str:
            return reverse("research-session", args=[row.batch_id, row.session_id])

    pagination_class = PageNumberPagination

    @extend_schema(parameters=[*FILTER_PARAMETERS, OUTCOME_PARAMETER],
                   responses={200: OutputSerializer(many=True), **ERRORS},
                   summary="Completed sessions, newest first (paginated)", tags=["research"])
    def get(self, request, batch_id: int):
        batch = _researcher_batch(request, batch_id)
        rows = selectors.counted_sessions(batch, parse_filters(request.query_params))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response(self.OutputSerializer(page, many=True).data)


class BatchRecomputeApi(JobCreationThrottled, APIView):
    @extend_schema(request=None, responses={202: JobSerializer, **ERRORS, **errors(429)},
                   summary="Queue a full recount of the batch's sessions (a job; poll its URL)", tags=["research"])
    def post(self, request, batch_id: int):
        batch = _researcher_batch(request, batch_id)
        job = services.recompute_job_create(batch=batch, user=request.user)
        headers = {"Location": reverse("api-batch-job", args=[batch.id, job.id])}
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED, headers=headers)


class BatchJobApi(APIView):
    @extend_schema(responses={200: JobSerializer, **ERRORS}, summary="A job of this batch (status, progress)",
                   tags=["research"])
    def get(self, request, batch_id: int, job_id: int):
        batch = _researcher_batch(request, batch_id)
        return Response(JobSerializer(selectors.job_for_batch(batch, job_id)).data)
