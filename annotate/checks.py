"""System checks for configuration a deployment gets wrong."""

import django
from django.conf import settings
from django.core.checks import Error, Warning, register

from annotate.server import prepared, single_statement


@register()
def check_deployment(app_configs, **kwargs):
    problems = []
    if not settings.DEBUG and not settings.ALLOWED_HOSTS:
        problems.append(Error("ALLOWED_HOSTS is empty while DEBUG is off", hint="Set ALLOWED_HOSTS=host1,host2",
                              id="feedback_lab.E001"))
    if settings.EMBEDDED_REDIS and not settings.DEBUG:
        problems.append(Warning("REDIS_URL is not set: using the embedded demo Redis",
                                hint="Set REDIS_URL=redis://host:6379/0 in production", id="feedback_lab.W001"))
    if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3") and not settings.DEBUG:
        problems.append(Warning("DATABASE_URL is not set: using SQLite",
                                hint="Set DATABASE_URL=postgres://... in production", id="feedback_lab.W002"))
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None) and not settings.TRUSTED_PROXIES:
        problems.append(Error(
            "BEHIND_TLS_PROXY is set but TRUSTED_PROXIES is empty: X-Forwarded-Proto is read from trusted proxies "
            "only, so no request would be seen as HTTPS (and SECURE_SSL_REDIRECT would redirect for ever)",
            hint="Set TRUSTED_PROXIES to the TLS proxy's address (e.g. 172.30.0.10)", id="feedback_lab.E003"))
    if settings.PREPARED_QUERIES and not prepared.django_is_checked():
        problems.append(Warning(
            f"Prepared queries read private queryset internals checked against Django "
            f"{'.'.join(map(str, prepared.CHECKED_DJANGO))}; Django {django.get_version()} is installed",
            hint="Set PREPARED_QUERIES=0 (the plain ORM) until tests/annotate/server/test_prepared.py passes on it",
            id="feedback_lab.W003"))
    return problems


@register()
def check_single_statement_models(app_configs, **kwargs):
    """The one-statement writes insert these models' rows column by column: refuse fields they would get wrong."""
    problems = []
    for model in single_statement.INSERTED_MODELS:
        for name in single_statement.unsupported_fields(model):
            problems.append(Error(
                f"{model.__name__}.{name} has a database default or is generated: the one-statement writes "
                "(annotate.server.single_statement) would insert it wrongly",
                hint="Give the field a Python default instead, or teach single_statement._insert_select about it",
                obj=model, id="feedback_lab.E002"))
    return problems
