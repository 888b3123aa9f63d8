"""What ``benchmarks/probe_asgi.py`` wrote in each web process during a phase of ``queue_load.py --probe``, summed
up: where a request waited (the connection pool, the event loop, asgiref's shared thread, the channel layer)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from benchmarks.figures import percentile


class Probe:
    """Reads what ``benchmarks/probe_asgi.py`` wrote in each web process during a phase (``--probe``)."""

    def __init__(self, logs: Path | None):
        self.logs, self.since = logs, 0.0
        for old in (logs.glob("probe-*.jsonl") if logs else []):
            old.unlink()

    def mark(self, title: str) -> None:
        self.since = time.time()

    def report(self) -> None:
        if self.logs is None:
            return
        lines = [json.loads(line) for path in self.logs.glob("probe-*.jsonl") for line in path.open()]
        lines = [line for line in lines if line["t"] >= self.since]
        if not lines:
            print("  probe: no samples")
            return
        pools = [line["pool"] for line in lines]
        total = {key: sum(pool.get(key, 0) for pool in pools) for key in
                 ("requests_num", "requests_queued", "requests_wait_ms", "requests_errors")}
        pids = {line["pid"] for line in lines}
        seconds = sum(line["dt"] for line in lines) / len(pids)
        n = total["requests_num"] or 1
        print(f"  probe, {len(pids)} web processes, {len(lines)} samples:")
        print(f"    pool: {total['requests_num'] / seconds:.0f} checkouts/s, {100 * total['requests_queued'] / n:.0f}% "
              f"waited, mean wait {total['requests_wait_ms'] / n:.1f} ms, "
              f"most waiting at once {max(pool.get('requests_waiting', 0) for pool in pools)}, "
              f"errors {total['requests_errors']}")

        def spread(key: str) -> str:
            values = [v for line in lines for v in line[key]]
            return (f"p50 {percentile(values, 0.5):.1f} / p95 {percentile(values, 0.95):.1f} / "
                    f"max {max(values or [float('nan')]):.1f} ms")

        print(f"    event-loop lag {spread('lag_ms')}")
        print(f"    asgiref's shared thread (thread-sensitive calls outside a request), wait {spread('ws_thread_ms')}")
        print(f"    channel layer round trip {spread('layer_ms')}")
        print(f"    threads per process, most {max(line['threads'] for line in lines)}")
