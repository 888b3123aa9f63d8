"""Settings for ``benchmarks/queue_load.py --pool N``: annotate.settings plus Django's PostgreSQL connection pool.

Under ASGI every request runs its synchronous view in a thread of its own, so Django's persistent connections
(CONN_MAX_AGE) are never reused and each request opens a PostgreSQL connection; with many concurrent requests
that is hundreds of connections. Django's pool (psycopg 3, Django >= 5.1) keeps a few per process instead.
Needs ``psycopg[binary,pool]`` importable.
"""

import os

from annotate.settings import *  # noqa: F403
from annotate.settings import DATABASES

DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool replaces persistent connections
DATABASES["default"]["OPTIONS"] = {
    "pool": {"min_size": 2, "max_size": int(os.environ.get("DB_POOL_MAX_SIZE", "8")), "timeout": 10}
}
