"""What the benchmarks print: percentiles by linear interpolation between the closest ranks (numpy's default),
and a yardstick of the machine's speed at the time of a run."""

from __future__ import annotations

import time


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``; nan when there are none."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def reference_workload_ms(repeats: int = 5) -> float:
    """The fastest of a few runs of a fixed pure-Python workload (building, formatting and sorting small dicts, as
    a request does), in ms. On a shared virtual machine the CPU's speed varies by tens of percent from one hour to
    the next; printed beside latencies, it tells whether two runs can be compared."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        rows = [{"id": i, "label": f"item-{i:05d}", "score": (i * 7919) % 1000} for i in range(20_000)]
        rows.sort(key=lambda row: (row["score"], row["label"]))
        best = min(best, time.perf_counter() - start)
    return best * 1000


def speed_before_and_after(before_ms: float) -> str:
    """The yardstick read before a run (``before_ms``) and now, as the in-process benchmarks print it."""
    return (f"machine speed: the reference workload took {before_ms:.1f} ms before, {reference_workload_ms():.1f} ms "
            f"after (lower is faster)")
