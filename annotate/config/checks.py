"""System checks for configuration a deployment gets wrong."""

from django.conf import settings
from django.core.checks import Error, Warning, register


@register()
def check_deployment(app_configs, **kwargs):
    problems = []
    local = settings.DEBUG or getattr(settings, "DEMO", False)  # the demo's embedded Redis and SQLite are meant
    if not settings.DEBUG and not settings.ALLOWED_HOSTS:
        problems.append(Error("ALLOWED_HOSTS is empty while DEBUG is off", hint="Set ALLOWED_HOSTS=host1,host2",
                              id="feedback_lab.E001"))
    if settings.EMBEDDED_REDIS and not local:
        problems.append(Warning("REDIS_URL is not set: using the embedded demo Redis",
                                hint="Set REDIS_URL=redis://host:6379/0 in production", id="feedback_lab.W001"))
    if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3") and not local:
        problems.append(Warning("DATABASE_URL is not set: using SQLite",
                                hint="Set DATABASE_URL=postgres://... in production", id="feedback_lab.W002"))
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None) and not settings.TRUSTED_PROXIES:
        problems.append(Error(
            "BEHIND_TLS_PROXY is set but TRUSTED_PROXIES is empty: X-Forwarded-Proto is read from trusted proxies "
            "only, so no request would be seen as HTTPS (and SECURE_SSL_REDIRECT would redirect for ever)",
            hint="Set TRUSTED_PROXIES to the TLS proxy's address (e.g. 172.30.0.10)", id="feedback_lab.E003"))
    return problems

