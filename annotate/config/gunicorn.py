"""gunicorn's settings for the HTTP side of a split deployment: ``gunicorn -c python:annotate.config.gunicorn``.

How many processes: gunicorn's documented starting point, (2 x cores) + 1. A process holds its requests while they
wait for PostgreSQL or for a core, so with one process per core requests queue in front of the server while a core
is idle; with 2 x cores + 1 the client's p95 stayed within 1.2x of the app's own up to the machine's saturation
(benchmarks/queue_load.py, docs/operations/scaling-out.md).

Two threads in each (gunicorn's gthread worker), not a sync process: gthread keeps a client's connection open
between its requests (keep-alive; a sync process closes it after every response, and gunicorn's documentation
expects a buffering proxy in front of it). A client that talks to gunicorn directly, such as an API client walking
the queue, then sends each request on the connection it has, to the process that answered the last one, instead
of a new connection that any of the processes may accept: one annotator's next-item p95 fell from 39-43 ms to
30-33 ms in runs alternated on one machine (benchmarks/compare_labelstudio.py). Only two threads, so that a request
rarely waits for the interpreter behind another of its process; 3 processes x 8 threads moved the wait into the
app at 1,000 annotators and took the cores from the WebSocket process and the worker. Each thread keeps its own
persistent connection to PostgreSQL (DB_CONN_MAX_AGE). WEB_HTTP_THREADS=1 runs sync processes instead.

At most 2 x threads connections per process (gunicorn's worker_connections; its default is 1,000): a gthread
process accepts new connections while it holds fewer than that, whether or not its threads are free, and queues
them behind its busy threads while another process's core is idle. With the bound, a busy process leaves the next
connection in the kernel's listen queue, where the first free process takes it; half of the bound is for
kept-alive connections (gunicorn keeps at most worker_connections - threads). At 1,000 annotators the client's
next-item p95 went from 1.34-1.38x the app's to 1.24-1.29x, alternated on one machine (benchmarks/queue_load.py).
"""

import os

from django.core.exceptions import ImproperlyConfigured

from annotate.server.env import env_int, env_str

wsgi_app = "annotate.config.wsgi:application"
bind = [env_str("WEB_HTTP_BIND", "0.0.0.0:8000")]
workers = env_int("WEB_HTTP_PROCESSES", 2 * (os.cpu_count() or 1) + 1)
threads = env_int("WEB_HTTP_THREADS", 2)
worker_class = "gthread" if threads > 1 else "sync"
worker_connections = env_int("WEB_HTTP_CONNECTIONS", 2 * threads)  # ignored by sync processes
if threads > 1 and worker_connections <= threads:
    raise ImproperlyConfigured(f"WEB_HTTP_CONNECTIONS must be more than WEB_HTTP_THREADS ({threads}), got "
                               f"{worker_connections}: a process needs a connection beyond its threads to keep one "
                               f"alive (the default is 2 x threads)")
backlog = 2048  # a thousand people arriving in the same minute wait in the kernel's queue, not refused
# Forwarded headers are the app's to read, from TRUSTED_PROXIES only (annotate.server.proxies), as under uvicorn's
# --no-proxy-headers: gunicorn itself trusts none.
forwarded_allow_ips = ""
