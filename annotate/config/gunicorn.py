"""gunicorn's settings for the HTTP side of a split deployment: ``gunicorn -c python:annotate.config.gunicorn``.

Sync workers, one request at a time per process: a request's queries then never wait for the interpreter behind
another thread of its process (under ASGI every request shares its process with the event loop and the other
requests' threads), and Django keeps one persistent connection per process (DB_CONN_MAX_AGE) instead of a pool.

How many: gunicorn's documented starting point, (2 x cores) + 1. A sync process holds its request while the
request waits for PostgreSQL or for a core, so with one process per core requests queue in front of the server
while a core is idle; with 2 x cores + 1 the client's p95 stayed within 1.2x of the app's own up to the machine's
saturation (benchmarks/queue_load.py, docs/operations/scaling-out.md). WEB_HTTP_THREADS above 1 gives each process
that many threads (gunicorn's gthread worker) instead.
"""

import os

from annotate.server.env import env_int, env_str

wsgi_app = "annotate.config.wsgi:application"
bind = [env_str("WEB_HTTP_BIND", "0.0.0.0:8000")]
workers = env_int("WEB_HTTP_PROCESSES", 2 * (os.cpu_count() or 1) + 1)
threads = env_int("WEB_HTTP_THREADS", 1)
worker_class = "gthread" if threads > 1 else "sync"
backlog = 2048  # a thousand people arriving in the same minute wait in the kernel's queue, not refused
# Forwarded headers are the app's to read, from TRUSTED_PROXIES only (annotate.server.proxies), as under uvicorn's
# --no-proxy-headers: gunicorn itself trusts none.
forwarded_allow_ips = ""
