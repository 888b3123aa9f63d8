"""A batch back to our InterFeedback format (``tasks.jsonl`` + ``images/`` in a zip): what ``export_batch`` writes,
and what importing it gives again the same tasks and images."""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections import defaultdict
from pathlib import Path

from django.core.files.storage import default_storage

from annotate.errors import ApplicationError
from annotate.models import Batch, Task, TaskImage


def batch_export_interfeedback(*, batch: Batch, path) -> dict:
    """Write our zip (``tasks.jsonl`` + ``images/``) so that importing it gives the same tasks and images."""
    if batch.kind != Batch.Kind.INTERFEEDBACK:
        raise ApplicationError(f"Batch {batch.name!r} is a {batch.kind} batch; only InterFeedback batches export "
                               "to this format.")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    images: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for task_id, sha, name in (TaskImage.objects.filter(task__batch=batch).order_by("task_id", "position")
                               .values_list("task_id", "blob__sha256", "blob__file")):
        images[task_id].append((sha, name))
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".part")
    os.close(fd)
    tasks = written = 0
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
            seen: set[str] = set()
            for pictures in images.values():
                for sha, name in pictures:
                    if sha not in seen:
                        seen.add(sha)
                        with default_storage.open(name, "rb") as stream:  # PNGs are compressed already
                            archive.writestr(f"images/{sha}.png", stream.read(), compress_type=zipfile.ZIP_STORED)
            written = len(seen)
            lines = []
            for task in Task.objects.filter(batch=batch).order_by("id").iterator(chunk_size=5000):
                lines.append(json.dumps(_export_record(task, images.get(task.pk, [])), ensure_ascii=False))
                tasks += 1
            archive.writestr("tasks.jsonl", "\n".join(lines) + ("\n" if lines else ""))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return {"tasks": tasks, "images": written, "path": str(path)}


def _export_record(task: Task, pictures: list[tuple[str, str]]) -> dict:
    record = {"id": task.external_id, "category": task.category, "question": task.question}
    if task.options:
        record["options"] = task.options
    record.update({"answer_type": task.answer_type, "answer": task.ground_truth,
                   "images": [f"images/{sha}.png" for sha, _ in pictures], "source": task.source})
    if task.recorded_answers:
        record["recorded_answers"] = task.recorded_answers
    record["meta"] = task.metadata or {}
    if task.is_gold:
        record["gold"] = True
    return record
