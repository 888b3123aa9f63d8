"""``GET /api/``: which Feedback Lab answers (its version, for a paper's methods section and for scripts that
check what they talk to) and where the API describes itself. Public, like the schema it points to."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.server.version import VERSION

ApiRootSerializer = inline_serializer("ApiRoot", {
    "name": serializers.CharField(),
    "version": serializers.CharField(help_text="The running release (pyproject.toml's version; CHANGELOG.md)"),
    "schema": serializers.CharField(help_text="The OpenAPI schema"),
    "docs": serializers.CharField(help_text="The browsable API documentation"),
    "format_schemas": serializers.CharField(help_text="The file formats' JSON Schemas"),
})


class ApiRootApi(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(summary="The running version and where the API describes itself", tags=["schema"],
                   responses={200: ApiRootSerializer})
    def get(self, request):
        return Response({"name": "Feedback Lab", "version": VERSION, "schema": reverse("api-schema"),
                         "docs": reverse("api-docs"), "format_schemas": reverse("api-format-schemas")})
