"""Following a run from a management command: a progress bar until it ends (Ctrl+C stops following, not the run)."""

from __future__ import annotations

import time

from tqdm import tqdm

from annotate.bench import services
from annotate.models import BenchRun


def follow(run: BenchRun, write) -> None:
    bar = tqdm(total=None, unit="call", desc=f"run {run.pk}")
    try:
        while True:
            run.refresh_from_db()
            progress = services.bench_progress(run)
            bar.n = progress["model_calls"]
            done = (f"turns {progress['turns']}" if "turns" in progress
                    else f"sessions {progress['sessions_done']}/{progress['sessions']}")
            bar.set_postfix_str(f"{done}, lanes {progress['lanes_done']}/{progress['lanes']}")
            bar.refresh()
            if run.status not in (BenchRun.Status.QUEUED, BenchRun.Status.RUNNING):
                return
            time.sleep(0.5)
    except KeyboardInterrupt:
        write("\nStopped following; the run goes on (run_bench --cancel RUN stops it).")
    finally:
        bar.close()
