"""What the OpenAPI schema says about every API: the one error body, the error responses by status, and file
downloads. Views pick from these in their ``extend_schema``; the shapes come from annotate.errors."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema_field, extend_schema_serializer
from rest_framework import serializers


@extend_schema_serializer(component_name="Error")
class ErrorSerializer(serializers.Serializer):
    """Every error answer (400, 403, 404, 409, 410, 415, 429). A 400 for bad fields also lists each field's problems under
    the field's name (``{"detail": "feedback: This field is required.", "code": "invalid", "feedback": [...]}``);
    some domain errors add keys of their own. A leak warning is no error: it is a 200 (StatedAnswerWarning)."""

    detail = serializers.CharField(help_text="What went wrong, in words a person can act on")
    code = serializers.CharField(help_text="A stable machine-readable reason, e.g. invalid, not_found, conflict")


@extend_schema_field(OpenApiTypes.URI_REF)
class UrlPathField(serializers.CharField):
    """A link on this site, as a path (``/api/jobs/7/``): a URI reference, not an absolute URI."""


ERROR_DESCRIPTIONS = {
    400: "Bad input: `detail` says what to fix, and each bad field is listed under its name",
    403: "Not signed in, or your role may not do this",
    404: "No such object, or not one you may see",
    409: "The request does not fit the object's current state",
    410: "Gone: the file has expired, create it again",
    415: "The body's Content-Type is not one this operation reads (JSON, form or multipart)",
    429: "Too many requests: wait as long as the Retry-After header says",
}


def errors(*codes: int, **descriptions: str) -> dict[int, OpenApiResponse]:
    """Error responses of an operation, e.g. ``errors(400, 403, 404, e404="No such batch")``."""
    return {code: OpenApiResponse(ErrorSerializer, description=descriptions.get(f"e{code}", ERROR_DESCRIPTIONS[code]))
            for code in codes}


def file_download(*content_types: str, description: str = "The file, as an attachment") -> dict:
    """A 200 answered with a file of one of these types (text types as strings, the others as bytes)."""
    def body(content_type: str):
        textual = content_type.startswith("text/") or content_type in TEXT_TYPES
        return OpenApiTypes.STR if textual else OpenApiTypes.BINARY

    return {(200, content_type): OpenApiResponse(body(content_type), description=description)
            for content_type in content_types}


TEXT_TYPES = {"application/jsonl", "application/x-tex", "image/svg+xml"}
