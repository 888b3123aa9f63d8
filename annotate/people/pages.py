"""What the setup pages (people, models, tokens) share: the admins-only rule and service errors shown beside the
form fields they name."""

from __future__ import annotations

from functools import wraps

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

from annotate.errors import InvalidFields


def admin_required(view):
    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_admin_role:
            raise PermissionDenied("Only admins may set up models and people.")
        return view(request, *args, **kwargs)

    return wrapper


def form_add_problems(form: forms.Form, error: InvalidFields) -> None:
    """Each problem next to its field: ``backend_settings.api_key_env`` goes under the backend_settings field as
    "api_key_env: ..."; problems of no field of this form go on top."""
    for where, message in error.problems:
        name, _, rest = where.partition(".")
        if name in form.fields:
            form.add_error(name, f"{rest}: {message}" if rest else message)
        else:
            form.add_error(None, f"{where}: {message}" if where else message)
