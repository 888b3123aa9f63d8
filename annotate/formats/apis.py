"""The format schemas over HTTP, public like the OpenAPI schema: an index, and one JSON Schema per format."""

from __future__ import annotations

from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.errors import NotFound
from annotate.formats.files import schema_text
from annotate.formats.schemas import SCHEMAS, WRITTEN
from annotate.server.api_schema import errors


class FormatSchemasApi(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(summary="The file formats' JSON Schemas: each one's name, title and address", tags=["schema"],
                   responses={200: inline_serializer(name="FormatSchemaEntry", many=True, fields={
                       "name": serializers.CharField(), "title": serializers.CharField(),
                       "direction": serializers.ChoiceField(choices=["import", "export"]),
                       "url": serializers.CharField()})})
    def get(self, request):
        return Response([{"name": name, "title": schema["title"], "direction": "import" if name in WRITTEN
                          else "export", "url": reverse("api-format-schema", args=[name])}
                         for name, schema in SCHEMAS.items()])


class FormatSchemaApi(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(summary="One file format's JSON Schema (draft 2020-12)", tags=["schema"],
                   operation_id="schema_format_retrieve",
                   responses={(200, "application/schema+json"): OpenApiTypes.OBJECT, **errors(404)})
    def get(self, request, name: str):
        if name not in SCHEMAS:
            raise NotFound(f"No format {name!r}; known: {', '.join(SCHEMAS)}.")
        return HttpResponse(schema_text(name), content_type="application/schema+json")
