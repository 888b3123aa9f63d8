"""Short garbage-collector pauses in long-running processes (web servers, workers).

Once a web process has loaded its URLconf, the Celery app and the broker's transport, it holds about 140k Python
objects (Django, DRF, Channels, Celery and numpy; scipy, matplotlib and scikit-learn load only where a figure or a
metric needs them, which tests/architecture/test_startup_imports.py checks). CPython's full collection walks every
one of them with the GIL held: on the queue_load benchmark, when a web process held about 260k, each full pass
froze it for 150-360 ms, and every request and WebSocket of that process waited. What is alive at start-up stays alive, so it is moved out of the
collector's sight (``gc.freeze``) once the process is loaded; later full passes walk only what requests created.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Collect once, then exempt every surviving object from later collections."""
    gc.collect()
    gc.freeze()
