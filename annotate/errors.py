"""Domain errors, mapped once to HTTP responses by the DRF exception handler."""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.http import JsonResponse
from django.utils.translation import gettext_lazy
from django.views import defaults
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from annotate.wording import shown

logger = logging.getLogger(__name__)

DATABASE_LOST = gettext_lazy(
    "The database connection was lost while handling this request. Send it again in a moment: "
    "a repeated submit is recognised and saved only once."
)


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


class Gone(ApplicationError):
    """The thing existed but is no longer kept (e.g. an export file past the retention period)."""

    http_status = status.HTTP_410_GONE
    code = "gone"


class InvalidFields(ApplicationError):
    """Bad input found by a service, every problem at once: ``problems`` is a list of (field, message).

    The answer reads like DRF's own 400: each field's messages under its name, the first problems in ``detail``
    (e.g. ``backend_settings.api_key_env: must be the NAME of an environment variable``).
    """

    code = "invalid"

    def __init__(self, problems: list[tuple[str, str]], *, extra: dict | None = None):
        self.problems = list(problems)
        by_field: dict[str, list[str]] = {}
        for field, message in self.problems:
            by_field.setdefault(field or "non_field_errors", []).append(message)
        shown = "; ".join(f"{field}: {message}" if field else message for field, message in self.problems[:5])
        more = len(self.problems) - 5
        message = shown + (f"; and {more} more problem(s)" if more > 0 else "")
        super().__init__(message, extra={**by_field, **(extra or {})})


class Conflict(ApplicationError):
    """The action does not fit the current state (e.g. feedback while the model is still answering)."""

    http_status = status.HTTP_409_CONFLICT
    code = "conflict"


def api_exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        return Response({"detail": shown(exc.message), "code": exc.code, **exc.extra}, status=exc.http_status)
    if isinstance(exc, OperationalError | InterfaceError):
        # A dropped connection (database restart, failover, killed backend): the statement in flight was rolled
        # back, and the next request gets a fresh connection. Say so in JSON the page can act on, not an HTML 500.
        logger.warning("database unavailable during %s: %s", context["request"].path, exc)
        return Response({"detail": str(DATABASE_LOST), "code": "database_unavailable"},
                        status=status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": "1"})
    response = exception_handler(exc, context)
    if response is not None:
        response.data = _with_detail_and_code(response.data)
    return response


def _with_detail_and_code(data) -> dict:
    """DRF's own errors in the one error shape, {"detail", "code", ...}: field errors stay under their field's
    name (clients read them there), with the first of them as the detail."""
    if isinstance(data, dict) and "detail" in data:
        return {**data, "code": data.get("code") or getattr(data["detail"], "code", None) or "error"}
    if isinstance(data, dict):
        return {"detail": _first_problem(data), "code": "invalid", **data}
    return {"detail": _first_problem(data), "code": "invalid", "errors": data}


def _first_problem(errors, path: str = "") -> str:
    if isinstance(errors, dict):
        for key, value in errors.items():
            name = path if key == "non_field_errors" else f"{path}.{key}" if path else str(key)
            return _first_problem(value, name)
    elif isinstance(errors, list) and errors:
        return _first_problem(errors[0], path)
    elif errors:
        return f"{path}: {errors}" if path else str(errors)
    return "The request is not valid."


def page_not_found(request, exception):
    """Django's 404 for pages; under /api/ the error body of every other API answer (a path Django's URL
    patterns refuse, e.g. /api/sessions/abc/, never reaches DRF)."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=status.HTTP_404_NOT_FOUND)
    return defaults.page_not_found(request, exception)
