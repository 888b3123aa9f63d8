"""Loaded with ``-p tests.env_defaults`` before Django's settings: safe defaults for running the suite.

DATABASE_URL and REDIS_URL from the environment win (CI points them at PostgreSQL and Redis); without them
the suite runs on SQLite (a file, so the live server and the worker processes share it) and embedded Redis.
"""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("SECRET_KEY", "test-only-secret-key")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
os.environ.setdefault("SESSION_COOKIE_SECURE", "0")
os.environ.setdefault("CSRF_COOKIE_SECURE", "0")
os.environ.setdefault("FEEDBACK_LAB_VAR_DIR", str(ROOT / "var" / "test"))
os.environ.setdefault("LOG_LEVEL", "WARNING")
# Every compiled read of the queue is checked against a fresh compile of its queryset (annotate.server.compiled_reads).
os.environ.setdefault("COMPILED_READS_CHECK", "1")
os.environ.setdefault("STATIC_FROM_FINDERS", "1")
# E-mail on (the People page's "E-mail the links"); pytest-django keeps every message in memory (mail.outbox).
os.environ.setdefault("EMAIL_BACKEND", "django.core.mail.backends.locmem.EmailBackend")
(Path(os.environ["FEEDBACK_LAB_VAR_DIR"]) / "staticfiles").mkdir(parents=True, exist_ok=True)
# Playwright's sync API runs an event loop in the test thread; the ORM calls around it are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
