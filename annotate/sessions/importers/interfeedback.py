"""Our InterFeedback batch format: JSON Lines, or a zip with ``tasks.jsonl`` and ``images/``."""

from __future__ import annotations

from pathlib import Path
from typing import IO

from annotate.importkit.common import (
    LIMITS,
    ImportContext,
    Importer,
    Source,
    SourceError,
    ZipSource,
    open_source,
    records_only_objects,
)
from annotate.importkit.records_file import load_records
from annotate.models import Batch
from annotate.sessions.importers.taskrecords import DuplicateIds, images_prepare, task_record
from annotate.sessions.importers.taskwriter import TaskPlan, plan_tasks, write_tasks

RECORDS_FILE = "tasks.jsonl"


def open_records_file(source: Source, path: Path, ctx: ImportContext,
                      filename: str = RECORDS_FILE) -> IO[bytes] | None:
    """The records file as a stream (``filename`` inside a zip, else the file at ``path`` itself), never read
    whole here: ``records_file`` reads it a chunk at a time. The caller closes it."""
    report = ctx.report
    try:
        if isinstance(source, ZipSource):
            if not source.use_root_of(filename):
                listed = ", ".join(sorted(source.names())[:8]) or "nothing"
                report.add(None, None, f"the zip has no {filename} at its top level (it holds: {listed})")
                return None
            return source.open(filename)
        size = path.stat().st_size
        if size > LIMITS.max_text_bytes:
            report.add(None, None, f"{path.name} is {size:,} bytes; at most {LIMITS.max_text_bytes:,} are allowed")
            return None
        return path.open("rb")
    except (SourceError, OSError) as error:
        report.add(None, None, str(error))
        return None


class InterFeedbackImporter(Importer):
    name = "interfeedback"
    batch_kind = Batch.Kind.INTERFEEDBACK

    def validate(self, ctx: ImportContext) -> TaskPlan | None:
        report, path = ctx.report, Path(ctx.path)
        images_dir = ctx.options.get("images_dir")
        if path.is_dir():
            report.add(None, None, f"{path} is a directory; give the tasks.jsonl file or a zip")
            return None
        source = open_source(path, report, images_dir=Path(images_dir) if images_dir else None)
        if source is None:
            return None
        try:
            with report.timed("validate"):
                stream = open_records_file(source, path, ctx)
                if stream is None:
                    return None
                label = RECORDS_FILE if isinstance(source, ZipSource) else path.name
                with stream:
                    raw = records_only_objects(load_records(stream, report, label=label), report)
                unknown: set[str] = set()
                records, duplicates = [], DuplicateIds(report)
                for done, (line, value) in enumerate(raw, start=1):
                    duplicates.check(line, value.get("id"))
                    record = task_record(value, line, report, max_rounds=ctx.max_rounds, unknown_seen=unknown)
                    if record is not None:
                        records.append(record)
                    if done % 5000 == 0:
                        ctx.tick("read", done, len(raw))
                ctx.tick("read", len(raw), len(raw))
                if not raw and report.ok:
                    report.add(None, None, f"{label} holds no tasks")
            with report.timed("images"):
                images = images_prepare(records, source, report, progress=ctx.progress)
        finally:
            source.close()
        if not report.ok:
            return None
        with report.timed("validate"):
            return plan_tasks(records, images, ctx.batch, report, update=ctx.update)

    def has_changes(self, plan: TaskPlan) -> bool:
        return plan.has_changes

    def write(self, plan: TaskPlan, ctx: ImportContext, batch: Batch) -> None:
        write_tasks(plan, batch, ctx.report, progress=ctx.progress)

    def record_count(self, batch: Batch) -> int:
        return batch.tasks.count()
