"""The one thread of a process that runs compiled decoding: every compile, every compiled ``generate()`` and every
reset of torch.compile's caches, for every model the process loads.

Why one thread: torch.compile's CUDA graphs (inductor's "cudagraph trees", ``mode="reduce-overhead"``) keep their
state in a ``threading.local`` set up by the thread that imports ``torch._inductor.cudagraph_trees``. In torch 2.11
compiled code called from any other thread fails an assertion deep in torch (``_is_key_in_tls``). A backend's
own scheduler thread lives only as long as its model, so a model loaded again (a changed config, a worker that
released and reloaded it) would compile and serve on a new thread and fail. This thread starts with the first
compiled model, imports that module before anything else, and stays for the life of the process. The GPU runs one
``generate()`` at a time either way.

``run_on_decode_thread(fn)`` runs ``fn`` there and returns its result (or raises its exception) in the caller.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

logger = logging.getLogger(__name__)

Result = TypeVar("Result")
THREAD_NAME = "compiled-decoding"
CUDA_GRAPHS_MODULE = "torch._inductor.cudagraph_trees"

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_thread_id: int | None = None


def run_on_decode_thread(fn: Callable[[], Result]) -> Result:
    """Run ``fn`` on the decode thread, waiting for it (at once when called from that thread)."""
    if threading.get_ident() == _thread_id:
        return fn()
    return _decode_executor().submit(fn).result()


def _decode_executor() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            # concurrent.futures keeps the one worker alive until the interpreter exits, and joins it then.
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_NAME, initializer=_claim)
        return _executor


def _claim() -> None:
    """First thing on the decode thread: own CUDA graphs' per-thread state by importing its module here."""
    global _thread_id
    _thread_id = threading.get_ident()
    import torch

    if not torch.cuda.is_available():
        return
    if CUDA_GRAPHS_MODULE in sys.modules:
        # Someone compiled with CUDA graphs on another thread first: with torch versions that keep their state
        # per thread, compiling here fails and the backend says so (compiled_decoding "auto" serves without).
        logger.warning(
            "%s was imported before the decode thread started: CUDA graphs may fail on this thread", CUDA_GRAPHS_MODULE
        )
    __import__(CUDA_GRAPHS_MODULE)


def _forget_after_fork() -> None:
    """A forked child has none of its parent's threads: it starts its own decode thread when it needs one."""
    global _executor, _lock, _thread_id
    _executor, _lock, _thread_id = None, threading.Lock(), None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
