"""What the setup pages (people, models, tokens) share: service errors shown beside the form fields they name
(the admins-only rule is annotate.people.access.admin_required)."""

from __future__ import annotations

from django import forms

from annotate.errors import InvalidFields


def form_add_problems(form: forms.Form, error: InvalidFields) -> None:
    """Each problem next to its field: ``backend_settings.api_key_env`` goes under the backend_settings field as
    "api_key_env: ..."; problems of no field of this form go on top."""
    for where, message in error.problems:
        name, _, rest = where.partition(".")
        if name in form.fields:
            form.add_error(name, f"{rest}: {message}" if rest else message)
        else:
            form.add_error(None, f"{where}: {message}" if where else message)
