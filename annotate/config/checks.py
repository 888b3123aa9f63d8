"""System checks for configuration a deployment gets wrong."""

from django.conf import settings
from django.core.checks import Error, Warning, register


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
    return problems

