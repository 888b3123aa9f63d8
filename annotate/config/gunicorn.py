"""gunicorn's settings for the HTTP side of a split deployment: ``gunicorn -c python:annotate.config.gunicorn``.

Sync workers, one request at a time per process: a request's queries then never wait for the interpreter behind
another thread of its process (under ASGI every request shares its process with the event loop and the other
requests' threads), and Django keeps one persistent connection per process (DB_CONN_MAX_AGE) instead of a pool.
Measured against uvicorn alone: docs/operations/scaling-out.md, benchmarks/results/2026-11-26.md.
"""

from annotate.server.env import env_int, env_str

wsgi_app = "annotate.config.wsgi:application"
bind = [env_str("WEB_HTTP_BIND", "0.0.0.0:8000")]
workers = env_int("WEB_HTTP_PROCESSES", 3)
worker_class = "sync"
backlog = 2048  # a thousand people arriving in the same minute wait in the kernel's queue, not refused
# Forwarded headers are the app's to read, from TRUSTED_PROXIES only (annotate.server.proxies), as under uvicorn's
# --no-proxy-headers: gunicorn itself trusts none.
forwarded_allow_ips = ""
