"""Short garbage-collector pauses in long-running processes (web servers, workers).

Once a web process has loaded its URLconf it holds about 260k Python objects (Django, DRF and the evaluation
stack with numpy, scipy and matplotlib behind the report views). CPython's full collection walks every one of
them with the GIL held: on the queue_load benchmark each full pass froze a web process for 150-360 ms, and every
request and WebSocket of that process waited. What is alive at start-up stays alive, so it is moved out of the
collector's sight (``gc.freeze``) once the process is loaded; later full passes walk only what requests created.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Collect once, then exempt every surviving object from later collections."""
    gc.collect()
    gc.freeze()
