"""Backup and restore drill: a study is run halfway on PostgreSQL, backed up with ``pg_dump`` while annotators work,
restored into a new database, and the app started on the restored copy with an empty Redis (as after losing the
machine). Shows that the backup is the study: nothing in it lost, nothing generated twice, and the study goes on.

Usage:
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/restore_drill.py
  ... --annotators 50 --seconds 40   the study's first half (the dump is taken at --dump-at s)
  ... --after 40                     how long the annotators go on on the restored database

What it does:
  1. Creates a scratch database ``<name>_drill_<pid>`` with the load benchmark's data (``queue_load.py``: a batch of
     ``--tasks`` tasks x 1 simulated model, three feedback rounds here, answers streamed in chunks so that rounds are
     under way at any moment) and starts the app on it as ``soak.py`` does: the ASGI server, one Celery worker,
     celery beat, an embedded Redis. ``--annotators`` simulated annotators (soak.py's: next item, WebSocket, drafts,
     submits with a client_request_id, Retry on a failed answer) work for ``--seconds``.
  2. At ``--dump-at`` s it takes the backup the operations guide gives (docs/operations/backup-and-restore.md):
     ``pg_dump --format=custom``. The dump runs on a snapshot exported from a transaction of this process, and the
     study bundle (``evaluation.exports.bundle``, the zip the ``export_bundle`` command writes) is built inside that
     same transaction: the bundle "at the dump's moment", to the row.
  3. When the first half ends the app is killed (SIGKILL, every process) and Redis emptied: what happened after the
     dump is what a restore loses. ``pg_restore`` loads the dump into a second scratch database ``<name>_restored_<pid>``.
  4. The app starts on the restored database (new processes, the empty Redis) and the annotators come back for
     ``--after`` s; the rounds the dump held queued or running are sent again by celery beat (queued ones) or failed
     with Retry (running ones whose worker is gone), and the annotators press Retry as the page offers.
  5. Prints: the bundle of the restored database against the bundle at the dump's moment (files equal, byte for
     byte or with only timestamps differing); the dump's rounds and sessions missing from the restored database,
     rounds done at the dump generated again (their answer or attempt count changed), rounds doubled (two rounds
     with one session and index, or one client_request_id); the sessions under way at the dump and how many went on
     (a new round done, or completed); items done, submits, HTTP 5xx and soak.py's lost rounds after the restore.
     Both scratch databases are dropped at the end (``--keep`` keeps them).
"""

from __future__ import annotations

import argparse
import fcntl
import io
import os
import re
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.queue_load import (  # noqa: E402
    BATCH_NAME,
    _admin,
    configure,
    create_data,
    start_processes,
    stop,
    tear_down,
)
from benchmarks.soak import _soak_settings, drain, lost_rounds, run, start_beat  # noqa: E402

# ISO 8601 timestamps and the dates matplotlib writes into a figure's metadata: the only parts of a bundle allowed to
# differ between two builds from the same rows.
TIMESTAMP = re.compile(rb"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=40, help="the study's first half, on the original database")
    parser.add_argument("--dump-at", type=float, default=20, help="when the pg_dump is taken, s into the first half")
    parser.add_argument("--after", type=float, default=40, help="the annotators' time on the restored database")
    parser.add_argument("--think", type=float, default=4.0, help="mean s to type each feedback and read an outcome")
    parser.add_argument("--chunk-delay", type=float, default=0.005, help="s between the simulated model's words")
    parser.add_argument("--celery-concurrency", type=int, default=4, help="the worker's processes")
    parser.add_argument("--drain", type=float, default=120,
                        help="at most this many s for the rounds under way to finish before the check")
    parser.add_argument("--requeue-after", type=int, default=10,
                        help="ROUND_REQUEUE_SECONDS of the app: a queued round with no worker is sent again after it")
    parser.add_argument("--keep", action="store_true", help="keep both scratch databases")
    args = parser.parse_args()
    if not 0 < args.dump_at < args.seconds:
        parser.error(f"--dump-at ({args.dump_at:g}) must fall inside the first half (0 < s < {args.seconds:g})")
    if not args.database_url.startswith("postgres"):
        parser.error("the drill needs PostgreSQL: DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres")
    return args


def with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/" + name))


def libpq_url(url: str) -> str:
    """pg_dump and pg_restore take postgresql:// (Django's settings also accept postgres://)."""
    return "postgresql://" + url.split("://", 1)[1]


# --- the dump and the bundle at its moment --------------------------------------------------------------------------


class Backup:
    """``pg_dump`` on a snapshot this process exports, with the bundle built in the transaction that holds it."""

    def __init__(self, database_url: str, path: Path):
        self.database_url, self.path = database_url, path
        self.bundle: dict[str, bytes] = {}
        self.rounds: dict[tuple[int, int], tuple[str, str, int]] = {}  # (session, index) -> (status, answer, attempts)
        self.under_way: dict[int, int] = {}  # session id -> rounds done at the dump
        self.seconds = 0.0
        self.error: BaseException | None = None

    def take(self) -> None:
        from django.db import connection, transaction

        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                    cursor.execute("SELECT pg_export_snapshot()")
                    snapshot = cursor.fetchone()[0]
                start = time.monotonic()
                dump = subprocess.run(
                    ["pg_dump", "--format=custom", f"--snapshot={snapshot}", f"--file={self.path}",
                     libpq_url(self.database_url)], capture_output=True, text=True)
                if dump.returncode:
                    raise RuntimeError(f"pg_dump failed: {dump.stderr.strip()}")
                self.seconds = time.monotonic() - start
                self.bundle = bundle_files()
                self.rounds, self.under_way = study_state()
        except BaseException as error:  # reported by the main thread
            self.error = error
        finally:
            connection.close()


def bundle_files() -> dict[str, bytes]:
    from annotate.models import Batch
    from evaluation.exports.bundle import bundle_write

    buffer = io.BytesIO()
    bundle_write(Batch.objects.get(name=BATCH_NAME), buffer)
    with zipfile.ZipFile(buffer) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def study_state() -> tuple[dict[tuple[int, int], tuple[str, str, int]], dict[int, int]]:
    from annotate.models import Round, Session

    rounds = {(s, i): (status, answer, attempts) for s, i, status, answer, attempts in Round.objects.filter(
        session__batch__name=BATCH_NAME).values_list("session_id", "index", "generation_status", "answer_text",
                                                     "attempts")}
    under_way = Session.objects.filter(batch__name=BATCH_NAME).exclude(
        status__in=[Session.Status.COMPLETED, Session.Status.ABANDONED])
    done = Round.Generation.DONE
    return rounds, {sid: sum(1 for (s, _), r in rounds.items() if s == sid and r[0] == done)
                    for sid in under_way.values_list("id", flat=True)}


def compare_bundles(at_dump: dict[str, bytes], restored: dict[str, bytes]) -> tuple[int, int, list[str]]:
    """(files byte for byte equal, equal once timestamps are masked, the names that differ otherwise)."""
    same = masked = 0
    differ = sorted(set(at_dump) ^ set(restored))
    for name in sorted(set(at_dump) & set(restored)):
        if at_dump[name] == restored[name]:
            same += 1
        elif TIMESTAMP.sub(b"<t>", at_dump[name]) == TIMESTAMP.sub(b"<t>", restored[name]):
            masked += 1
        else:
            differ.append(name)
    return same, masked, differ


# --- the restored study ----------------------------------------------------------------------------------------------


def restore(database_url: str, name: str, dump: Path) -> float:
    _admin(database_url, f'CREATE DATABASE "{name}"')
    start = time.monotonic()
    result = subprocess.run(["pg_restore", "--no-owner", "--exit-on-error", f"--dbname={libpq_url(with_database(database_url, name))}",
                             str(dump)], capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"pg_restore failed: {result.stderr.strip()}")
    return time.monotonic() - start


def use_database(name: str) -> None:
    """Point this process's Django connection at another database."""
    from django.db import connections

    connections.close_all()
    connections["default"].settings_dict["NAME"] = name


def doubled_rounds() -> int:
    """Rounds of the study beyond the first with one session and index, or with one client_request_id."""
    from django.db.models import Count

    from annotate.models import Round

    rounds = Round.objects.filter(session__batch__name=BATCH_NAME)
    by_index = rounds.values("session_id", "index").annotate(n=Count("id")).filter(n__gt=1)
    by_request = rounds.exclude(client_request_id="").values("client_request_id").annotate(n=Count("id")).filter(n__gt=1)
    return sum(row["n"] - 1 for row in by_index) + sum(row["n"] - 1 for row in by_request)


def resumed(backup: Backup) -> dict[str, int]:
    from annotate.models import Round, Session

    rounds = Round.objects.filter(session__batch__name=BATCH_NAME)
    now = {(s, i): (status, answer, attempts) for s, i, status, answer, attempts in rounds.values_list(
        "session_id", "index", "generation_status", "answer_text", "attempts")}
    done = Round.Generation.DONE
    regenerated = sum(1 for key, (status, answer, attempts) in backup.rounds.items()
                      if status == done and key in now and now[key][1:] != (answer, attempts))
    sessions = dict(Session.objects.filter(id__in=backup.under_way).values_list("id", "status"))
    went_on = sum(1 for sid, done_then in backup.under_way.items()
                  if sessions.get(sid) == Session.Status.COMPLETED
                  or sum(1 for (s, _), r in now.items() if s == sid and r[0] == done) > done_then)
    in_flight = [key for key, r in backup.rounds.items() if r[0] in (Round.Generation.QUEUED, Round.Generation.RUNNING)]
    return {
        "rounds missing": sum(1 for key in backup.rounds if key not in now),
        "sessions missing": sum(1 for sid in backup.under_way if sid not in sessions),
        "done rounds generated again": regenerated,
        "doubled rounds": doubled_rounds(),
        "under way": len(backup.under_way),
        "went on": went_on,
        "in flight at the dump": len(in_flight),
        "in flight finished since": sum(1 for key in in_flight if now.get(key, ("",))[0] == done),
    }


def first_half(args, env: dict, var_dir: Path, backup: Backup, credentials):
    procs, base, ws_base, described = start_processes(env, var_dir, app_args(args))
    procs.append(start_beat(env, var_dir, var_dir / "logs"))
    print(f"server: {described}; celery beat; {args.annotators} annotators; {os.cpu_count()} CPUs", flush=True)
    timer = threading.Timer(args.dump_at, backup.take)
    timer.start()
    soak = run_soak(base, ws_base, procs, env, var_dir, args, args.seconds, credentials)
    timer.join()
    return procs, soak


def app_args(args) -> SimpleNamespace:
    # One uvicorn process for HTTP and WebSockets, one worker: the small deployment (queue_load.py --server uvicorn).
    return SimpleNamespace(server="uvicorn", web_workers=1, pool=4, celery_concurrency=args.celery_concurrency,
                           probe=False)


def run_soak(base, ws_base, procs, env, var_dir, args, seconds, credentials):
    """soak.py's annotators for ``seconds``, with no worker kills."""
    from benchmarks.load_client import run_client

    options = SimpleNamespace(minutes=seconds / 60, drain=0.0, stall=15.0, think=args.think, ramp=min(5.0, seconds / 4),
                              kill_every=10**9, celery_concurrency=2)
    return run_client(run(base, ws_base, credentials, procs, env, var_dir / "logs", options))


def flush_redis(var_dir: Path) -> None:
    import redis

    from annotate.server import embedded_redis

    redis.Redis.from_url(embedded_redis.redis_url(var_dir)).flushall()


def main() -> None:
    args = parse_args()
    tag = os.getpid()
    original = f"{urlsplit(args.database_url).path.lstrip('/')}_drill_{tag}"
    restored_name = f"{urlsplit(args.database_url).path.lstrip('/')}_restored_{tag}"
    var_dir = ROOT / "var" / "restore_drill"
    (var_dir / "logs").mkdir(parents=True, exist_ok=True)
    lock = (var_dir / "run.lock").open("w")
    try:  # two drills at once would share the embedded Redis (the drill empties it)
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit("another restore drill is in progress (var/restore_drill/run.lock)")
    _admin(args.database_url, f'CREATE DATABASE "{original}"')
    original_url = with_database(args.database_url, original)
    env = configure(original_url, var_dir)
    # Rounds queued at the dump lost their message with Redis: sent again after this long (production: 120 s).
    env["ROUND_REQUEUE_SECONDS"] = str(args.requeue_after)
    procs = []
    try:
        _, credentials = create_data(args.tasks, args.annotators, reuse=False)
        _soak_settings(SimpleNamespace(chunk_delay=args.chunk_delay))
        backup = Backup(original_url, var_dir / "study.dump")
        procs, before = first_half(args, env, var_dir, backup, credentials[1:])
        if backup.error:
            raise backup.error
        print(f"\nfirst half ({args.seconds:g} s): {before.sessions} sessions started, {len(before.acknowledged)} "
              f"submits answered, 5xx {before.server_errors}")
        print(f"pg_dump at {args.dump_at:g} s while the annotators worked: {backup.seconds:.2f} s, "
              f"{backup.path.stat().st_size / 1e6:.1f} MB; {len(backup.rounds)} rounds, {len(backup.under_way)} "
              f"sessions under way")
        # A control: the work done after the dump changes the bundle (what a restore loses), so equal means equal.
        _, _, changed = compare_bundles(backup.bundle, bundle_files())
        print(f"control: the original database's bundle at the end of the first half differs from the dump's in "
              f"{len(changed)} files")
        for proc in procs:  # the machine dies: every process at once, no goodbye
            os.killpg(proc.pid, 9)
        stop(procs)
        procs = []
        flush_redis(var_dir)
        took = restore(args.database_url, restored_name, backup.path)
        print(f"pg_restore into a new database: {took:.2f} s; Redis emptied (it holds nothing that must survive)")
        use_database(restored_name)
        restored_url = with_database(args.database_url, restored_name)
        env = {**env, "DATABASE_URL": restored_url}
        restored_bundle = bundle_files()
        same, masked, differ = compare_bundles(backup.bundle, restored_bundle)
        print(f"bundle: {len(backup.bundle)} files at the dump, {len(restored_bundle)} from the restored database: "
              f"{same} byte for byte equal, {masked} equal but for timestamps, {len(differ)} different"
              + (f" {differ}" if differ else ""))

        procs, after_soak = second_half(args, env, var_dir, credentials[1:])
        drain(args.drain)
        state = resumed(backup)
        lost = lost_rounds(after_soak.acknowledged)
        from annotate.models import Session

        print(f"\nafter the restore ({args.after:g} s): {after_soak.sessions} sessions started or resumed, "
              f"{len(after_soak.acknowledged)} submits answered, Retry pressed {after_soak.retries}, "
              f"{Session.objects.filter(batch__name=BATCH_NAME, status=Session.Status.COMPLETED).count()} sessions "
              f"completed in all; client errors: {dict(after_soak.client_errors) or 0}")
        print(f"sessions under way at the dump: {state['under way']}, went on after the restore: {state['went on']}; "
              f"rounds queued or running at the dump: {state['in flight at the dump']}, done since: "
              f"{state['in flight finished since']}")
        lost_total = state["rounds missing"] + state["sessions missing"] + sum(lost.values())
        print("lost by kind: rounds of the dump missing {rounds missing}, sessions missing {sessions missing}, "
              .format(**state) + ", ".join(f"{kind} {n}" for kind, n in lost.items()))
        print(f"lost: {lost_total}")
        print(f"duplicated: {state['doubled rounds'] + state['done rounds generated again']} (doubled rounds "
              f"{state['doubled rounds']}, rounds done at the dump generated again {state['done rounds generated again']})")
        print(f"5xx after the restore: {after_soak.server_errors}")
    finally:
        tear_down(procs, var_dir, args.database_url, None)
        if not args.keep:
            for name in (original, restored_name):
                _admin(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def second_half(args, env: dict, var_dir: Path, credentials):
    procs, base, ws_base, _ = start_processes(env, var_dir, app_args(args))
    procs.append(start_beat(env, var_dir, var_dir / "logs"))
    print("app started on the restored database (new processes, the emptied Redis)", flush=True)
    return procs, run_soak(base, ws_base, procs, env, var_dir, args, args.after, credentials)


if __name__ == "__main__":
    main()
