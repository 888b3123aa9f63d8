"""Start-up time of the commands and of a second `make demo`.

Usage:
  .venv/bin/python benchmarks/startup.py [--runs 5]

What runs: the demo's own setup in a scratch directory (``FEEDBACK_LAB_VAR_DIR``: its SQLite file and embedded
Redis), so your demo is left alone. Then, each ``--runs`` times, in a fresh process:
  1. ``manage.py check``;
  2. ``manage.py export_tables --batch "Demo batch" --table accuracy --format json``;
then once a second start of the demo as ``make demo`` runs it (migrate, demo_setup, run_demo: everything is
installed and migrated already), timed from the first command to the moment the login page answers 200.
Printed: median and max of each command (target <= 1.5 s), and the demo's time to the login page (target <= 10 s).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PYTHON = sys.executable
DEMO_BATCH = "Demo batch"


def scratch_env(var_dir: Path) -> dict[str, str]:
    """The demo's environment (SQLite, embedded Redis) in a scratch directory."""
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
    return {**env, "FEEDBACK_LAB_VAR_DIR": str(var_dir), "DEBUG": "1", "PYTHONUNBUFFERED": "1"}


def manage(env: dict[str, str], *args: str) -> float:
    """Run one manage.py command in a fresh process; seconds it took (it must succeed)."""
    started = time.perf_counter()
    subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def login_page_answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def demo_to_login_page(env: dict[str, str], timeout: float = 120) -> float:
    """`make demo`'s three commands, from the first to the login page answering; then Ctrl-C, as a user stops it."""
    port = free_port()
    started = time.perf_counter()
    manage(env, "migrate", "--no-input")
    manage(env, "demo_setup")
    demo = subprocess.Popen([PYTHON, "manage.py", "run_demo", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        while not login_page_answers(port):
            if demo.poll() is not None:
                raise SystemExit(f"run_demo exited with {demo.returncode} before serving the login page")
            if time.perf_counter() - started > timeout:
                raise SystemExit(f"the login page did not answer within {timeout:.0f} s")
            time.sleep(0.05)
        return time.perf_counter() - started
    finally:
        os.killpg(demo.pid, signal.SIGINT)
        try:
            demo.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)


def summary(name: str, seconds: list[float], target: float) -> str:
    worst = max(seconds)
    verdict = "met" if worst <= target else "MISSED"
    return (f"{name:<48} median {statistics.median(seconds):5.2f} s   max {worst:5.2f} s   "
            f"(target <= {target} s: {verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as scratch:
        env = scratch_env(Path(scratch))
        print("Setting up the demo in a scratch directory (first start, not measured) ...")
        first = demo_to_login_page(env)
        print(f"first make demo, to the login page: {first:.1f} s (creates the database and the demo batch)")
        checks = [manage(env, "check") for _ in range(args.runs)]
        exports = [manage(env, "export_tables", "--batch", DEMO_BATCH, "--table", "accuracy", "--format", "json")
                   for _ in range(args.runs)]
        second = demo_to_login_page(env)
        print(summary("manage.py check", checks, 1.5))
        print(summary("manage.py export_tables --format json", exports, 1.5))
        verdict = "met" if second <= 10 else "MISSED"
        print(f"{'second make demo, to the login page':<48} {second:5.2f} s (target <= 10 s: {verdict})")


if __name__ == "__main__":
    main()
