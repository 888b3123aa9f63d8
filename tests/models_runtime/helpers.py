"""Helpers shared by the model runtime tests."""

from __future__ import annotations

import threading

from models_runtime import ModelRequest


def together(backend, requests: list[ModelRequest], read=None) -> list:
    """Each request from a thread of its own, all starting at once. ``read(index, stream)`` replaces collect()."""
    results: list = [None] * len(requests)
    start = threading.Barrier(len(requests))

    def worker(index: int) -> None:
        try:
            stream = backend.stream(requests[index])
            start.wait(timeout=10)
            results[index] = read(index, stream) if read else stream.collect()
        except BaseException as exc:  # handed to the test thread in place of the result
            results[index] = exc

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    return results
