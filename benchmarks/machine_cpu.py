"""What the parts of a benchmark run cost the machine: CPU seconds per part from /proc (the web processes, the
worker, PostgreSQL, Redis, the client, the whole machine, the host's steal), and the whole machine sampled second by
second while a phase runs. Linux only. Used by queue_load.py and the benchmarks built on it."""

from __future__ import annotations

import os
import subprocess
import threading

# What each process queue_load's start_processes returns is, in its order: the ASGI server, the worker, a split's
# gunicorn.
PROCESS_ROLES = ("web", "worker", "of which HTTP")


def machine_ticks() -> list[int]:
    """The whole machine's CPU time so far, in clock ticks (/proc/stat): user, nice, system, idle, iowait, irq,
    softirq, steal."""
    with open("/proc/stat") as stat:
        return [int(v) for v in stat.readline().split()[1:9]]


def _process_stat(pid: int | str) -> tuple[str, int, int]:
    """A process's name, parent and CPU time so far (user and system, in clock ticks) from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as stat:
        comm, _, rest = stat.read().rpartition(")")
    fields = rest.split()
    return comm.partition("(")[2], int(fields[1]), int(fields[11]) + int(fields[12])


def process_cpu_ms(pid: int) -> float:
    """CPU time one process has used so far (user and system), in ms; its resolution is a clock tick (10 ms), so
    compare means over many requests, not one."""
    return _process_stat(pid)[2] * 1000 / os.sysconf("SC_CLK_TCK")


def cpu_seconds(procs: list[subprocess.Popen], *, database: str | None = None,
                redis_pid: int | None = None) -> dict[str, float]:
    """CPU seconds used so far by each part sharing this machine (Linux /proc): the web processes, the worker,
    PostgreSQL, Redis and this process (with any child of its own: "client"), the whole machine, and the time the
    host took from this virtual machine (steal). Exited processes drop out, so compare two readings of one phase
    only. With ``database``, PostgreSQL is the backends serving that database and the server's own background
    processes (not other databases' sessions: other work on the machine); with ``redis_pid``, Redis is that
    server only."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, used, name = {}, {}, {}
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        try:
            name[pid], parent[pid], ticks = _process_stat(pid)
        except OSError:  # exited meanwhile
            continue
        used[pid] = ticks / tick

    roots = {os.getpid(): "client", **{proc.pid: role for proc, role in zip(procs, PROCESS_ROLES, strict=False)}}

    def root_of(pid: int) -> str | None:
        while pid > 1:
            if pid in roots:
                return roots[pid]
            pid = parent.get(pid, 0)
        return None

    def ours(pid: int) -> bool:
        if name[pid] == "redis-server":
            return redis_pid in (None, pid)
        if database is None:
            return True
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                title = cmdline.read().decode(errors="replace")
        except OSError:
            return False
        # A backend's title is "postgres: 15/main: user database host(port) state"; background processes have none.
        return "(" not in title or f" {database} " in title

    # The HTTP server of a split deployment counts in "web" and on its own (the rest of "web" is the ASGI server).
    totals = dict.fromkeys(("web", "of which HTTP", "worker", "PostgreSQL", "Redis", "client"), 0.0)
    for pid, seconds in used.items():
        role = {"postgres": "PostgreSQL", "redis-server": "Redis"}.get(name[pid]) or root_of(pid)
        if role and (role not in ("PostgreSQL", "Redis") or ours(pid)):
            totals[role] += seconds
    if len(procs) < len(PROCESS_ROLES):  # one server for HTTP and WebSockets
        del totals["of which HTTP"]
    else:
        totals["web"] += totals["of which HTTP"]
    # Everything else too (the kernel's share of the loopback traffic, other processes): the parts above do not add
    # up to what the cores were busy with.
    user, nice, system, _idle, _iowait, irq, softirq, steal = machine_ticks()
    totals["whole machine"] = (user + nice + system + irq + softirq) / tick
    # Time the hypervisor gave this virtual machine's cores to others while they had work: on a shared host it
    # slows every part above, whatever this run does.
    totals["stolen by the host"] = steal / tick
    return totals


class MachineSampler:
    """The whole machine's busy share, second by second, while a phase runs (Linux /proc/stat): a phase's mean
    hides a burst, so it also says how many seconds the cores were saturated (>= 95% busy)."""

    def __init__(self):
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _read() -> tuple[int, int]:
        ticks = machine_ticks()
        idle = ticks[3] + ticks[4]  # idle and iowait: a core waiting for the disk has no work to run
        return sum(ticks) - idle, sum(ticks)

    def _run(self) -> None:
        busy, total = self._read()
        while not self._stop.wait(1.0):
            now_busy, now_total = self._read()
            if now_total > total:
                self.samples.append(100 * (now_busy - busy) / (now_total - total))
            busy, total = now_busy, now_total

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def describe(self) -> str:
        if not self.samples:
            return "no sample"
        saturated = sum(1 for share in self.samples if share >= 95)
        return (f"busy {sum(self.samples) / len(self.samples):.0f}% on average, saturated (>= 95%) {saturated} s of "
                f"{len(self.samples)} s, the busiest 10 s at {busiest(self.samples, 10):.0f}%")


def busiest(samples: list[float], window: int) -> float:
    """The highest mean of ``window`` consecutive samples."""
    if len(samples) <= window:
        return sum(samples) / len(samples)
    return max(sum(samples[i:i + window]) / window for i in range(len(samples) - window + 1))


def cpu_shares(before: dict[str, float], after: dict[str, float], elapsed: float) -> str:
    return ", ".join(f"{role} {100 * (after[role] - before[role]) / elapsed:.0f}%" for role in before)
