"""Side by side with Label Studio: the same text tasks imported into both, and one annotator walking each queue,
on the same PostgreSQL in the same run. Prints import tasks/s and next-item / submit p95 for both, with the ratio.

Usage:
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/compare_labelstudio.py
  ... --tasks 10000 --items 50     a smaller run (a few minutes less)
  ... --reuse-venv                 use the Label Studio venv an earlier run installed (skips ~2 min of pip)

What it does:
  1. Installs Label Studio (LABEL_STUDIO_VERSION, pinned) from PyPI into a venv of its own under
     benchmarks/out/labelstudio/ (ignored by git); ``--reuse-venv`` keeps one that has that version.
  2. Creates two scratch databases with unique names next to the given one (``<name>_cmp_ls_<pid>`` and
     ``<name>_cmp_ours_<pid>``), dropped at the end, and starts Label Studio on the first with its own ``start``
     command (``--no-browser``, a data directory under the scratch folder, a user and an API token of its own):
     Django's threaded server, as ``label-studio start`` serves it.
  3. Import: the same ``--tasks`` text tasks (choice, number and text answers, no images). Label Studio: a
     project with a choices config, then one ``POST /api/projects/<id>/import`` of the tasks as JSON (timed from
     sending the request to its answer; the body is encoded beforehand). Ours: ``POST /api/imports/`` of the same
     records as ``tasks.jsonl`` (a multipart upload), timed until the import job, run by the Celery worker at
     normal priority for it, is seen done; then ``batch_import`` of the same file into a second batch in this
     process (timed from reading the file to the commit), as ``import_speed.py`` does.
  4. One annotator, no pauses, ``--items`` items each. Label Studio: ``GET /api/projects/<id>/next/``, then
     ``POST /api/tasks/<id>/annotations/`` with a choice. Ours as ``queue_load.py``'s phase 1 (gunicorn for the
     API, uvicorn for the WebSockets, a Celery worker with a simulated model): ``POST /api/next/``, the model's
     answer on the WebSocket, ``POST .../feedback/``, the session completes. Every latency is the client's: from
     sending the request to having read the whole answer, over one keep-alive connection.

Everything shares this machine's cores, so other work shows in the figures: a machine-speed yardstick and the
load average are printed with them. Ratios are from one run; compare runs only at a similar speed.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.figures import percentile, reference_workload_ms  # noqa: E402
from benchmarks.load_client import run_phase_in_processes  # noqa: E402
from benchmarks.queue_load import (  # noqa: E402
    _admin,
    _credentials,
    analyze,
    configure,
    free_port,
    scratch_database,
    start_processes,
    tear_down,
    worker_priority,
)

LABEL_STUDIO_VERSION = "1.23.2"
SCRATCH = ROOT / "benchmarks" / "out" / "labelstudio"
BATCH_NAME = "compare-labelstudio"
LS_USER, LS_PASSWORD = "bench@example.com", "compare-bench-only"
CATEGORIES = ["Visual Logic", "Mathematical Logic", "MMMU-Pro", "MathVerse", "Math (Text)", "Coding (Text)"]
LABEL_CONFIG = ('<View><Text name="question" value="$question"/><Choices name="answer" toName="question">'
                + "".join(f'<Choice value="{c}"/>' for c in "ABCD") + "</Choices></View>")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--tasks", type=int, default=100_000, help="text tasks imported into each")
    parser.add_argument("--items", type=int, default=200, help="items the one annotator walks through in each")
    parser.add_argument("--reuse-venv", action="store_true",
                        help=f"use the venv under {SCRATCH.relative_to(ROOT)} as is when it has Label Studio "
                             f"{LABEL_STUDIO_VERSION} (otherwise it is made afresh)")
    args = parser.parse_args()
    if args.tasks < 1 or args.items < 1:
        parser.error("--tasks and --items must be at least 1")
    if args.items > args.tasks:
        parser.error(f"--items ({args.items}) cannot exceed --tasks ({args.tasks}): each item is a task")
    if not args.database_url.startswith(("postgres://", "postgresql://")):
        parser.error("this benchmark needs PostgreSQL: DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres")
    return args


# --- Label Studio's venv and server --------------------------------------------------------------------------------


def label_studio_venv(reuse: bool) -> Path:
    """The venv's directory, with Label Studio LABEL_STUDIO_VERSION installed."""
    venv = SCRATCH / f"venv-{LABEL_STUDIO_VERSION}"
    python = venv / "bin" / "python"
    if reuse and python.exists():
        found = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('label-studio'))"],
                               capture_output=True, text=True)
        if found.stdout.strip() == LABEL_STUDIO_VERSION:
            print(f"Label Studio {LABEL_STUDIO_VERSION}: reusing {venv.relative_to(ROOT)}", flush=True)
            return venv
    shutil.rmtree(venv, ignore_errors=True)
    SCRATCH.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    # Its own interpreter's base (not our venv): Label Studio pins its own Django and friends.
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", venv], check=True)
    log = SCRATCH / "pip.log"
    with log.open("w") as out:
        done = subprocess.run([python, "-m", "pip", "install", f"label-studio=={LABEL_STUDIO_VERSION}"],
                              stdout=out, stderr=subprocess.STDOUT)
    if done.returncode:
        sys.exit(f"pip could not install label-studio=={LABEL_STUDIO_VERSION}; see {log}")
    print(f"Label Studio {LABEL_STUDIO_VERSION}: installed in {time.perf_counter() - start:.0f} s", flush=True)
    return venv


def start_label_studio(venv: Path, database_url: str, data_dir: Path, token: str) -> tuple[subprocess.Popen, str]:
    """``label-studio start`` on its scratch database; returns (process, base URL) once it answers."""
    parts = urlsplit(database_url)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "DEBUG")}
    env.update({
        "DJANGO_DB": "default", "POSTGRE_NAME": parts.path.lstrip("/"), "POSTGRE_USER": parts.username or "postgres",
        "POSTGRE_PASSWORD": parts.password or "", "POSTGRE_HOST": parts.hostname or "127.0.0.1",
        "POSTGRE_PORT": str(parts.port or 5432), "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
        "LOG_LEVEL": "WARNING", "DEBUG": "false", "PYTHONUNBUFFERED": "1",
    })
    data_dir.mkdir(parents=True, exist_ok=True)
    command = [venv / "bin" / "label-studio", "start", "--no-browser", "--data-dir", data_dir,
               "--internal-host", "127.0.0.1", "--port", str(port), "--log-level", "WARNING",
               "--username", LS_USER, "--password", LS_PASSWORD, "--user-token", token, "--enable-legacy-api-token"]
    log = data_dir / "label-studio.log"
    proc = subprocess.Popen(command, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600  # its migrations on an empty database take a while
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"Label Studio exited ({proc.returncode}); see {log}")
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as response:
                if response.status == 200:
                    return proc, base
        except OSError:
            time.sleep(0.5)
    stop_process(proc)
    sys.exit(f"Label Studio did not answer within 10 min; see {log}")


def stop_process(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


class Api:
    """One keep-alive connection with an API token; each call returns (status, JSON, ms)."""

    def __init__(self, base: str, token: str, content_type: str = "application/json"):
        parts = urlsplit(base)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)
        self.headers = {"Authorization": f"Token {token}", "Content-Type": content_type}

    def call(self, method: str, path: str, body: bytes | None = None) -> tuple[int, object, float]:
        start = time.perf_counter()
        self.connection.request(method, path, body=body, headers=self.headers)
        response = self.connection.getresponse()
        raw = response.read()
        ms = (time.perf_counter() - start) * 1000
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw[:300]
        return response.status, payload, ms


# --- the tasks -----------------------------------------------------------------------------------------------------


def make_records(n: int) -> list[dict]:
    """Text tasks in our canonical shape: most multiple choice, some with a number or a short text answer."""
    rng = random.Random(7)
    records = []
    for i in range(n):
        record = {"id": f"task-{i:06d}", "category": rng.choice(CATEGORIES),
                  "question": f"Question {i}: which option completes the pattern described? " * 2,
                  "source": "compare-labelstudio"}
        kind = rng.random()
        if kind < 0.6:
            record.update(options=[f"option {c} of {i}" for c in "ABCD"], answer_type="choice",
                          answer=rng.choice("ABCD"))
        elif kind < 0.85:
            record.update(answer_type="number", answer=str(rng.randint(-500, 5000)))
        else:
            record.update(answer_type="text", answer=f"answer {i}")
        record["meta"] = {"row": i}
        records.append(record)
    return records


# --- the two imports -----------------------------------------------------------------------------------------------


def import_label_studio(api: Api, records: list[dict]) -> tuple[int, float]:
    """(project id, seconds of the import request)."""
    status, project, _ = api.call("POST", "/api/projects/",
                                  json.dumps({"title": BATCH_NAME, "label_config": LABEL_CONFIG}).encode())
    if status != 201:
        sys.exit(f"Label Studio refused the project: {status} {project}")
    body = json.dumps([{"data": record} for record in records]).encode()
    status, answer, ms = api.call("POST", f"/api/projects/{project['id']}/import", body)
    if status != 201 or answer.get("task_count") != len(records):
        sys.exit(f"Label Studio's import answered {status}: {answer}")
    return project["id"], ms / 1000


def import_ours_api(base: str, token: str, records: list[dict], workdir: Path) -> float:
    """Seconds from sending ``POST /api/imports/`` (tasks.jsonl as a multipart upload) to the import job seen done
    (a Celery worker runs it; its status is read every 20 ms)."""
    path = workdir / "tasks.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    boundary = f"compare{os.urandom(8).hex()}"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
             for name, value in (("name", BATCH_NAME), ("kind", "interfeedback"))]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="tasks.jsonl"\r\n'
                 "Content-Type: application/octet-stream\r\n\r\n".encode() + path.read_bytes()
                 + f"\r\n--{boundary}--\r\n".encode())
    api = Api(base, token, content_type=f"multipart/form-data; boundary={boundary}")
    body = b"".join(parts)
    start = time.perf_counter()
    status, job, _ = api.call("POST", "/api/imports/", body)
    if status != 202:
        sys.exit(f"our import API answered {status}: {job}")
    url = job["url"]
    while True:
        status, job, _ = api.call("GET", url)
        if status != 200 or job["status"] not in ("queued", "running"):
            break
        time.sleep(0.02)
    seconds = time.perf_counter() - start
    if status != 200 or job["status"] != "succeeded":
        sys.exit(f"our import job ended {status} {job.get('status')}: {job.get('error') or job}")
    return seconds


def import_ours_in_process(records: list[dict], workdir: Path) -> float:
    """Seconds of ``batch_import`` of the same file into a second batch in this process (as import_speed.py):
    the import itself, without the upload and the job."""
    from annotate.imports.batches import batch_import

    start = time.perf_counter()
    report = batch_import(path=workdir / "tasks.jsonl", name=BATCH_NAME + "-in-process", kind="interfeedback")
    seconds = time.perf_counter() - start
    if not report.ok or report.counts.get("created") != len(records):
        sys.exit(f"our import failed:\n{report.render()}")
    return seconds


def our_people() -> tuple[str, list[tuple[str, str]]]:
    """An admin's API token (for the import) and one annotator's (API token, session cookie)."""
    from rest_framework.authtoken.models import Token

    from annotate.models import ModelConfig, User

    ModelConfig.objects.create(name="bench-sim", backend=ModelConfig.Backend.SIMULATED,
                               backend_settings={"chunk_delay": 0})
    admin = User.objects.create(username="bench-admin", pseudonym="bench-admin", role=User.Role.ADMIN, password="!")
    user = User.objects.create(username="bench-0000", pseudonym="bench-0000", role=User.Role.ANNOTATOR, password="!")
    return Token.objects.create(user=admin).key, _credentials([Token.objects.create(user=user)])


def serve_ours() -> None:
    """The imported batch served as queue_load.py serves its own: one simulated model, one round after the first
    answer, overlap 1."""
    from annotate.imports.batches import batch_settings_apply
    from annotate.models import Batch

    batch_settings_apply(batch=Batch.objects.get(name=BATCH_NAME),
                         settings={"models": "bench-sim", "max_rounds": 1, "overlap": 1})
    analyze()


# --- the two walks -------------------------------------------------------------------------------------------------


def walk_label_studio(api: Api, project_id: int, items: int) -> dict[str, list[float]]:
    stats: dict[str, list[float]] = {"next": [], "submit": []}
    annotation = json.dumps({"result": [{"from_name": "answer", "to_name": "question", "type": "choices",
                                         "value": {"choices": ["A"]}}], "lead_time": 4.2}).encode()
    for _ in range(items):
        status, task, ms = api.call("GET", f"/api/projects/{project_id}/next/")
        if status != 200:
            sys.exit(f"Label Studio's next task answered {status}: {task}")
        stats["next"].append(ms)
        status, answer, ms = api.call("POST", f"/api/tasks/{task['id']}/annotations/", annotation)
        if status != 201:
            sys.exit(f"Label Studio's annotation answered {status}: {answer}")
        stats["submit"].append(ms)
    return stats


def walk_ours(base: str, ws_base: str, credentials: list[tuple[str, str]], items: int) -> dict[str, list[float]]:
    clients = run_phase_in_processes(base, ws_base, BATCH_NAME, credentials, processes=1, seconds=max(60, items),
                                     think=0, ramp=0, max_cycles=items, wait="ws", poll=0.02)
    stats = clients.stats
    if stats.errors:
        sys.exit(f"our walk had errors: {stats.errors}")
    return {"next": stats.next, "submit": stats.submit}


# --- the figures ---------------------------------------------------------------------------------------------------


def print_figures(args, ls_import: float, ours_import: float, in_process: float, ls_walk: dict,
                  ours_walk: dict) -> None:
    def ratio(theirs: float, ours: float) -> str:
        return f"{theirs / ours:.1f}x" if ours > 0 else "n/a"

    print(f"\nSide by side: {args.tasks:,} text tasks, one annotator x {args.items} items "
          f"(Label Studio {LABEL_STUDIO_VERSION}; {os.cpu_count()} CPUs; load average "
          f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}; machine speed {reference_workload_ms():.1f} ms)")
    print(f"  {'':<30}{'ours':>12}{'Label Studio':>16}{'ratio (ours better by)':>26}")
    ours_rate, ls_rate = args.tasks / ours_import, args.tasks / ls_import
    print(f"  {'import (API), tasks/s':<30}{ours_rate:>12,.0f}{ls_rate:>16,.0f}{ratio(ours_rate, ls_rate):>26}")
    print(f"  {'import (API), seconds':<30}{ours_import:>12.2f}{ls_import:>16.2f}")
    inner = args.tasks / in_process
    print(f"  {'  ours in process, tasks/s':<30}{inner:>12,.0f}{'':>16}{ratio(inner, ls_rate):>26}")
    for key, label in (("next", "next item"), ("submit", "submit")):
        for q, name in ((0.5, "p50"), (0.95, "p95")):
            ours, theirs = percentile(ours_walk[key], q), percentile(ls_walk[key], q)
            print(f"  {f'{label} {name}, ms':<30}{ours:>12.1f}{theirs:>16.1f}{ratio(theirs, ours):>26}")
    print(f"  (n = {len(ours_walk['next'])} items ours, {len(ls_walk['next'])} Label Studio's)")


def main() -> None:
    args = parse_args()
    venv = label_studio_venv(args.reuse_venv)
    run = f"{os.getpid()}"
    workdir = SCRATCH / f"run-{run}"
    workdir.mkdir(parents=True, exist_ok=True)
    ls_url, ls_db = scratch_database(args.database_url, False, suffix=f"_cmp_ls_{run}")
    ours_url, ours_db = scratch_database(args.database_url, False, suffix=f"_cmp_ours_{run}")
    var_dir = ROOT / "var" / f"compare_bench_{run}"
    label_studio, procs, configured, finished = None, [], False, False
    try:
        token = f"cmp{os.urandom(16).hex()}"
        start = time.perf_counter()
        label_studio, ls_base = start_label_studio(venv, ls_url, workdir / "label-studio-data", token)
        print(f"Label Studio serving at {ls_base} after {time.perf_counter() - start:.0f} s (migrations included)",
              flush=True)
        env = configure(ours_url, var_dir)
        configured = True
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        admin_token, credentials = our_people()
        options = SimpleNamespace(server="split", web_workers=1, http_workers=None, http_threads=None, pool=8,
                                  celery_concurrency=2, probe=False)
        procs, base, ws_base, described = start_processes(env, var_dir, options)
        print(f"ours: {described}", flush=True)
        records = make_records(args.tasks)
        api = Api(ls_base, token)
        print(f"import of {args.tasks:,} text tasks: machine speed {reference_workload_ms():.1f} ms "
              f"(lower is faster)", flush=True)
        project_id, ls_import = import_label_studio(api, records)
        print(f"  Label Studio {ls_import:.2f} s (machine speed after: {reference_workload_ms():.1f} ms)", flush=True)
        # An import job is work of its own that Label Studio's import does at normal priority: ours does too.
        worker_priority(procs[1], "other")  # start_processes returns the web server(s), then the worker
        ours_import = import_ours_api(base, admin_token, records, workdir)
        worker_priority(procs[1], "idle")
        print(f"  ours {ours_import:.2f} s (machine speed after: {reference_workload_ms():.1f} ms)", flush=True)
        in_process = import_ours_in_process(records, workdir)
        print(f"  ours in process {in_process:.2f} s", flush=True)
        serve_ours()
        print(f"one annotator, {args.items} items each: machine speed {reference_workload_ms():.1f} ms", flush=True)
        ls_walk = walk_label_studio(api, project_id, args.items)
        ours_walk = walk_ours(base, ws_base, credentials, args.items)
        print_figures(args, ls_import, ours_import, in_process, ls_walk, ours_walk)
        finished = True
    finally:
        stop_process(label_studio)
        if configured:  # our processes, the embedded Redis and our database
            tear_down(procs, var_dir, args.database_url, ours_db)
        else:
            _admin(args.database_url, f'DROP DATABASE IF EXISTS "{ours_db}" WITH (FORCE)')
        _admin(args.database_url, f'DROP DATABASE IF EXISTS "{ls_db}" WITH (FORCE)')
        if finished:  # a failed run keeps its logs
            shutil.rmtree(var_dir, ignore_errors=True)
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs: {var_dir / 'logs'}, {workdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
