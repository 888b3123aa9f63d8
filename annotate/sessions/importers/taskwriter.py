"""Compare validated task records with what a batch already holds, then write the difference in bulk.

Idempotency rests on ``Task.content_hash``: the same id with the same content is left alone ("unchanged");
the same id with other content is an error unless the import was asked to update.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from annotate.importkit.bulk import insert_rows
from annotate.importkit.common import ImportReport, Progress
from annotate.importkit.images import PreparedImage, images_store_bulk
from annotate.models import Batch, ImageBlob, Session, Task, TaskImage
from annotate.sessions.importers.taskrecords import TaskRecord, content_hash

WRITE_CHUNK = 2000
_UPDATED_FIELDS = ["category", "question", "options", "answer_type", "ground_truth", "source", "metadata",
                   "recorded_answers", "is_gold", "content_hash"]


@dataclass
class TaskPlan:
    records: list[TaskRecord]
    images: dict[str, PreparedImage]
    create: list[TaskRecord] = field(default_factory=list)
    update: list[tuple[int, TaskRecord]] = field(default_factory=list)
    unchanged: int = 0

    @property
    def has_changes(self) -> bool:
        return bool(self.create or self.update)


def _stored_comparable(task_ids: list[int]) -> dict[int, dict]:
    """What the database holds for these tasks, in the shape of ``TaskRecord.comparable``."""
    digests: dict[int, list[str]] = defaultdict(list)
    out = {}
    for start in range(0, len(task_ids), WRITE_CHUNK):
        chunk = task_ids[start:start + WRITE_CHUNK]
        for task_id, digest in (TaskImage.objects.filter(task_id__in=chunk).order_by("task_id", "position")
                                .values_list("task_id", "blob__sha256")):
            digests[task_id].append(digest)
        for task in Task.objects.filter(pk__in=chunk):
            out[task.pk] = {
                "category": task.category, "question": task.question, "options": task.options,
                "answer_type": task.answer_type, "answer": task.ground_truth, "source": task.source,
                "meta": task.metadata, "recorded_answers": task.recorded_answers, "gold": task.is_gold,
                "images": digests[task.pk],
            }
    return out


def plan_tasks(records: list[TaskRecord], images: dict[str, PreparedImage], batch: Batch | None,
               report: ImportReport, *, update: bool, unit: str = "line") -> TaskPlan:
    plan = TaskPlan(records, images)
    if batch is not None:
        _diff_existing(plan, batch, report, update=update, unit=unit)
    else:
        plan.create = list(records)
    report.counts.update({
        "tasks": len(records), "created": len(plan.create), "updated": len(plan.update),
        "unchanged": plan.unchanged, "images": len({d for r in records for d in r.image_digests}),
    })
    return plan


def _diff_existing(plan: TaskPlan, batch: Batch, report: ImportReport, *, update: bool, unit: str) -> None:
    records = plan.records
    existing = {ext: (pk, digest) for ext, pk, digest in
                Task.objects.filter(batch=batch).values_list("external_id", "id", "content_hash")}
    # Tasks made outside an import (demo, admin) have no hash yet: compute it from what is stored.
    blank = [pk for pk, digest in existing.values() if not digest]
    if blank:
        hashes = {pk: content_hash(c) for pk, c in _stored_comparable(blank).items()}
        existing = {ext: (pk, digest or hashes.get(pk, "")) for ext, (pk, digest) in existing.items()}
    changed: list[tuple[int, TaskRecord]] = []
    for record in records:
        found = existing.get(record.external_id)
        if found is None:
            plan.create.append(record)
        elif found[1] == record.content_hash:
            plan.unchanged += 1
        else:
            changed.append((found[0], record))
    if changed and update:
        plan.update = changed
        annotated = set(Session.objects.filter(batch=batch).values_list("task_id", flat=True).distinct())
        if count := len(annotated & {pk for pk, _ in changed}):
            report.warn(f"{count} updated task(s) already have annotation sessions; those keep their old answers")
    elif changed:
        stored = _stored_comparable([pk for pk, _ in changed])
        for pk, record in changed:
            new = record.comparable()
            differs = sorted(k for k in new if stored.get(pk, {}).get(k) != new[k])
            report.add(record.line, "id", f"task {record.external_id!r} already exists in batch {batch.name!r} "
                       f"with different {', '.join(differs) or 'content'}; import with update to replace it",
                       unit=unit)
    if missing := len(existing.keys() - {r.external_id for r in records}):
        report.warn(f"{missing} task(s) of batch {batch.name!r} are not in this file; they were kept")


def _known_blobs(digests: set[str]) -> set[str]:
    wanted, known = list(digests), set()
    for start in range(0, len(wanted), WRITE_CHUNK):
        known.update(ImageBlob.objects.filter(sha256__in=wanted[start:start + WRITE_CHUNK])
                     .values_list("sha256", flat=True))
    return known


_TASK_FIELDS = ("batch", "external_id", "category", "question", "options", "answer_type", "ground_truth", "source",
                "metadata", "recorded_answers", "is_gold", "content_hash")


def _task_values(batch_id: int, r: TaskRecord) -> tuple:
    return (batch_id, r.external_id, r.category, r.question, r.options, r.answer_type, r.ground_truth, r.source,
            r.metadata, r.recorded_answers, r.is_gold, r.content_hash)


def write_tasks(plan: TaskPlan, batch: Batch, report: ImportReport, *, progress: Progress | None = None) -> None:
    """Inside the import's transaction: store images once, insert new tasks, replace changed ones."""
    needed = {d for record in plan.create for d in record.image_digests}
    needed |= {d for _, record in plan.update for d in record.image_digests}
    new_images, blob_ids = 0, {}
    if needed:
        known = _known_blobs(needed)
        new_images = len(needed - known)
        blob_ids = images_store_bulk(plan.images[d] for d in needed)
    links: list[tuple[int, int, int]] = []
    total = len(plan.create) + len(plan.update)
    step = WRITE_CHUNK * 10
    for start in range(0, len(plan.create), step):
        chunk = plan.create[start:start + step]
        insert_rows(Task, _TASK_FIELDS, [_task_values(batch.pk, r) for r in chunk])
        if progress:
            progress("write", start + len(chunk), total)
    if plan.create:  # one query maps the new external ids to their keys
        by_external = dict(Task.objects.filter(batch=batch).values_list("external_id", "id"))
        ids = [by_external[r.external_id] for r in plan.create]
    else:
        ids = []
    for task_id, record in zip(ids, plan.create, strict=True):
        links += [(task_id, blob_ids[d], i) for i, d in enumerate(record.image_digests)]
    if plan.update:
        rows = []
        for pk, record in plan.update:
            row = Task(pk=pk, **dict(zip(_TASK_FIELDS[1:], _task_values(batch.pk, record)[1:], strict=True)))
            row.batch_id = batch.pk
            rows.append(row)
            links += [(pk, blob_ids[d], i) for i, d in enumerate(record.image_digests)]
        updated = [pk for pk, _ in plan.update]
        for start in range(0, len(updated), WRITE_CHUNK):
            TaskImage.objects.filter(task_id__in=updated[start:start + WRITE_CHUNK]).delete()
        Task.objects.bulk_update(rows, _UPDATED_FIELDS, batch_size=WRITE_CHUNK)
        if progress:
            progress("write", total, total)
    insert_rows(TaskImage, ("task", "blob", "position"), links)
    report.counts["images_new"] = new_images
