"""Domain errors, mapped once to HTTP responses by the DRF exception handler."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler


class ApplicationError(Exception):
    """A request the domain refuses, with a message a person can act on."""

    http_status = status.HTTP_400_BAD_REQUEST
    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, extra: dict | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.extra = extra or {}


class NotFound(ApplicationError):
    http_status = status.HTTP_404_NOT_FOUND
    code = "not_found"


class PermissionDenied(ApplicationError):
    http_status = status.HTTP_403_FORBIDDEN
    code = "permission_denied"


class Conflict(ApplicationError):
    """The action does not fit the current state (e.g. feedback while the model is still answering)."""

    http_status = status.HTTP_409_CONFLICT
    code = "conflict"


def api_exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        return Response({"detail": exc.message, "code": exc.code, **exc.extra}, status=exc.http_status)
    return exception_handler(exc, context)
