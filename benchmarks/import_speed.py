"""Import speed: 100k InterFeedback tasks with a few thousand small images, validated and
written by ``batch_import`` in one transaction. Target: 100k tasks in <= 20 s (>= 8,400 tasks/s incl. images;
Label Studio imports ~2,800 text-only tasks/s on this machine).

Usage:
  .venv/bin/python benchmarks/import_speed.py                      # SQLite in a temporary directory
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/import_speed.py

On PostgreSQL it creates a scratch database next to the given one (``<name>_import_bench``) and drops it at
the end (``--in-place`` uses the given database and deletes the batch afterwards). It prints tasks/s and the
phases: validate (parse + schema checks + comparison with the database), images (read, verify, re-encode,
hash), write (the transaction: blobs, tasks, task images), and a second run of the same file ("unchanged").
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CATEGORIES = ["Visual Logic", "Mathematical Logic", "MMMU-Pro", "MathVerse", "Math (Text)", "Coding (Text)"]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--images", type=int, default=3_000, help="distinct images in the zip")
    parser.add_argument("--image-share", type=float, default=0.5, help="share of tasks that show an image")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--in-place", action="store_true", help="PostgreSQL: use the given database itself")
    parser.add_argument("--profile", action="store_true", help="print the top of a cProfile of the import")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    return parser.parse_args()


def make_zip(path: Path, n_tasks: int, n_images: int, image_share: float) -> None:
    import numpy as np
    from PIL import Image

    rng = random.Random(7)
    noise = np.random.default_rng(7)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for i in range(n_images):
            # 48x40 pictures with a little noise: small, distinct, and real PNG decoding work.
            pixels = noise.integers(0, 255, size=(40, 48, 3), dtype=np.uint8)
            out = io.BytesIO()
            Image.fromarray(pixels, "RGB").save(out, format="PNG")
            archive.writestr(f"images/img-{i:05d}.png", out.getvalue(), compress_type=zipfile.ZIP_STORED)
        lines = []
        for i in range(n_tasks):
            kind = rng.random()
            record = {"id": f"task-{i:06d}", "category": rng.choice(CATEGORIES),
                      "question": f"Question {i}: which option completes the pattern shown? " * 2,
                      "source": "import-speed-benchmark"}
            if kind < 0.6:
                record.update(options=[f"option {c} of {i}" for c in "ABCD"], answer_type="choice",
                              answer=rng.choice("ABCD"))
            elif kind < 0.85:
                record.update(answer_type="number", answer=str(rng.randint(-500, 5000)))
            elif kind < 0.95:
                record.update(answer_type="text", answer=f"answer {i}")
            else:
                record.update(answer_type="manual", answer=f"def f():\n    return {i}")
            if rng.random() < image_share:
                picks = rng.sample(range(n_images), 2 if rng.random() < 0.1 else 1)
                record["images"] = [f"images/img-{p:05d}.png" for p in picks]
            else:
                record["images"] = []
            if rng.random() < 0.1:
                record["recorded_answers"] = {"replay-model": ["Answer: A", "Answer: B"]}
            record["meta"] = {"row": i}
            lines.append(json.dumps(record))
        archive.writestr("tasks.jsonl", "\n".join(lines) + "\n")


def setup_database(args, workdir: Path) -> tuple[str, callable]:
    """Point Django at the database to time; returns (description, cleanup)."""
    os.environ.setdefault("SECRET_KEY", "import-speed-benchmark")
    os.environ["FEEDBACK_LAB_VAR_DIR"] = str(workdir / "var")
    os.environ["MEDIA_ROOT"] = str(workdir / "media")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    url = args.database_url
    if not url:
        os.environ.pop("DATABASE_URL", None)
        return "SQLite (temporary file)", lambda: None
    if args.in_place or not url.startswith(("postgres://", "postgresql://")):
        os.environ["DATABASE_URL"] = url
        return f"{url} (in place)", lambda: None
    import psycopg

    base, _, name = url.rpartition("/")
    scratch = f"{name or 'postgres'}_import_bench"
    admin = psycopg.connect(url, autocommit=True)
    with admin.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{scratch}"')
        cursor.execute(f'CREATE DATABASE "{scratch}"')
    os.environ["DATABASE_URL"] = f"{base}/{scratch}"

    def drop():
        from django.db import connections

        connections.close_all()
        with admin.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{scratch}"')
        admin.close()

    return f"PostgreSQL scratch database {scratch} on {base}", drop


def main() -> None:
    args = parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="import-speed-"))
    described, cleanup = setup_database(args, workdir)
    try:
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotate.config.settings")
        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        from annotate.imports.batches import batch_import
        from annotate.models import Batch, ImageBlob, Task, TaskImage

        path = workdir / "batch.zip"
        start = time.perf_counter()
        make_zip(path, args.tasks, args.images, args.image_share)
        print(f"generated {args.tasks:,} tasks, {args.images:,} images: {path.stat().st_size / 1e6:.1f} MB "
              f"in {time.perf_counter() - start:.1f} s")
        print(f"database: {described}")

        profiler = cProfile.Profile() if args.profile else None
        marks: dict[str, float] = {}

        def progress(phase, done, total):  # CPU seconds at each phase's start: robust on a busy machine
            marks.setdefault(phase, time.process_time())

        start, cpu_start = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        report = batch_import(path=path, name="import-speed", kind="interfeedback", progress=progress)
        if profiler:
            profiler.disable()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        if not report.ok:
            print(report.render())
            raise SystemExit(1)
        counts = (Task.objects.count(), TaskImage.objects.count(), ImageBlob.objects.count())
        print(f"import:    {elapsed:6.2f} s   {args.tasks / elapsed:9,.0f} tasks/s   status={report.status}   "
              f"(this process's CPU: {cpu:.2f} s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
        for phase in ("validate", "images", "write"):
            print(f"  {phase:<8} {report.timings.get(phase, 0):6.2f} s wall")
        cpu_marks = [cpu_start, marks.get("images", cpu_start), marks.get("write", cpu_start), cpu_start + cpu]
        print("  cpu: read+check {:.2f} s, images {:.2f} s, write {:.2f} s".format(
            *(b - a for a, b in zip(cpu_marks, cpu_marks[1:], strict=False))))
        print(f"  rows: {counts[0]:,} tasks, {counts[1]:,} task images, {counts[2]:,} image blobs")

        start = time.perf_counter()
        again = batch_import(path=path, name="import-speed", kind="interfeedback")
        print(f"re-import: {time.perf_counter() - start:6.2f} s   status={again.status}  (idempotent, nothing written)")
        print(f"target: >= 8,400 tasks/s (100k in <= 20 s): {'met' if args.tasks / elapsed >= 8400 else 'NOT met'}")
        if profiler:
            pstats.Stats(profiler).sort_stats(os.environ.get("PROFILE_SORT", "cumulative")).print_stats(35)
        if args.in_place:
            batch = Batch.objects.get(name="import-speed")
            TaskImage.objects.filter(task__batch=batch).delete()
            Task.objects.filter(batch=batch)._raw_delete(Task.objects.db)
            batch.delete()
    finally:
        cleanup()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
