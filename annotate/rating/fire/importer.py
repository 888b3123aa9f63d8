"""FIRE conversations importer: the released FIRE JSON (a list) or JSONL, images from a zip or a directory.

A record (the released FIRE format)::

    {"image": "bars_01.png", "question": {"value": "..."}, "groundtruth": {"value": "..."},
     "conversations": [{"role": "student", "type": "response", "value": "Thought: ...\\nAnswer: ..."},
                       {"role": "teacher", "type": "feedback", "value": "Score: 3.\\nFeedback: ..."}, ...],
     "source": "chartqa", "round": 2, "score": [3, 10], "split": "fire_test"}

Everything is validated first (every problem as ``line N, field F: what is wrong``); then one transaction writes
the batch, its conversations, turns and work items (one per conversation; overlap K raters each).

Records have no id in the released files: the conversation's id is its ``id`` field when present, else
``fire-<record number>``, so re-importing the same file finds the same conversations.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

from annotate.importkit.common import (
    LIMITS,
    ImportContext,
    Importer,
    ImportReport,
    SourceError,
    ZipSource,
    open_source,
)
from annotate.importkit.images import PreparedImage, images_store_bulk
from annotate.importkit.records_file import load_records
from annotate.models import Batch, Conversation, Turn
from annotate.queue.services import work_items_create_for_batch
from annotate.rating.fire.records import ImageFinder, ParsedConversation, content_hash, parse_record

KIND = "fire"


def _records_and_images(path: Path, images: Path | None, report: ImportReport):
    """(records, image source). A zip may hold the records file (the only *.json / *.jsonl) and the images."""
    if zipfile.is_zipfile(path):
        archive = open_source(path, report)
        if archive is None:
            return [], None
        candidates = [n for n in archive.names() if n.lower().endswith((".json", ".jsonl"))]
        if len(candidates) != 1:
            report.add(None, None, f"the zip must hold exactly one .json or .jsonl file, found {len(candidates)}")
            return [], None
        try:
            stream = archive.open(candidates[0])
        except SourceError as error:
            report.add(None, None, str(error))
            return [], None
        with stream:
            records = load_records(stream, report, label=candidates[0])
        image_source = open_source(images, report) if images else archive
        return records, image_source
    if not path.is_file():
        report.add(None, None, f"{path} does not exist or is not a file")
        return [], None
    size = path.stat().st_size
    if size > LIMITS.max_text_bytes:
        report.add(None, None, f"{path.name} is {size:,} bytes; at most {LIMITS.max_text_bytes:,} are allowed")
        return [], None
    image_source = open_source(images, report) if images else open_source(path, report)
    if isinstance(image_source, ZipSource) and not images:
        image_source = None
    with path.open("rb") as stream:
        return load_records(stream, report, label=path.name), image_source


def validate(
    path: Path, *, images: Path | None, report: ImportReport, parse=parse_record
) -> tuple[list[ParsedConversation], dict[str, PreparedImage]]:
    """Read and check every record with ``parse``; problems go to the report. Returns the conversations and
    their images."""
    with report.timed("validate"):
        records, image_source = _records_and_images(path, images, report)
        if len(records) > LIMITS.max_records:
            report.add(None, None, f"{len(records):,} records; at most {LIMITS.max_records:,} are allowed")
            return [], {}
        if not records and report.ok:
            report.add(None, None, "the file holds no conversations")
        image_finder = ImageFinder(image_source, report)
        seen_ids: dict[str, int] = {}
        unknown: set[str] = set()
        parsed = []
        for position, (line, record) in enumerate(records, start=1):
            conv = parse(line, position, record, image_finder, report, seen_ids, unknown)
            if conv is not None:
                sha = image_finder.prepared[conv.image_key].sha256 if conv.image_key else None
                conv.content_hash = content_hash(conv, sha)
                parsed.append(conv)
        if image_source is not None:
            image_source.close()
    return parsed, image_finder.prepared


def _check_existing(batch: Batch, parsed: list[ParsedConversation], report: ImportReport, update: bool):
    """Re-import: same id and content → unchanged; changed content → error unless update (and not yet rated)."""
    existing = {c.external_id: c for c in batch.conversations.only("id", "external_id", "content_hash", "position")}
    rated = set(
        batch.conversations.filter(turns__ratings__isnull=False).values_list("external_id", flat=True).distinct()
    )
    new, changed = [], []
    for conv in parsed:
        old = existing.get(conv.external_id)
        if old is None:
            new.append(conv)
        elif old.content_hash != conv.content_hash:
            if not update:
                report.add(conv.line, None, f"conversation {conv.external_id!r} is already in batch {batch.name!r} "
                           "with different content; import with --update to replace it")
            elif conv.external_id in rated:
                report.add(conv.line, None, f"conversation {conv.external_id!r} already has ratings; "
                           "it cannot be replaced")
            else:
                changed.append((old, conv))
    return new, changed


@dataclass
class FirePlan:
    new: list[ParsedConversation]
    changed: list[tuple[Conversation, ParsedConversation]]
    images: dict[str, PreparedImage]

    @property
    def has_changes(self) -> bool:
        return bool(self.new or self.changed)

    @property
    def conversations(self) -> list[ParsedConversation]:
        """What this import writes (new and changed conversations)."""
        return [*self.new, *(conv for _, conv in self.changed)]


def _write(batch: Batch, plan: FirePlan) -> int:
    new, changed, prepared = plan.new, plan.changed, plan.images
    used = {c.image_key for c in new + [c for _, c in changed] if c.image_key}
    blob_ids = images_store_bulk([prepared[key] for key in used]) if used else {}

    def fields_of(conv: ParsedConversation) -> dict:
        image_id = blob_ids[prepared[conv.image_key].sha256] if conv.image_key else None
        return dict(external_id=conv.external_id, position=conv.position, image_id=image_id,
                    image_name=conv.image_name, question=conv.question, ground_truth=conv.ground_truth,
                    source=conv.source, split=conv.split, round=conv.round, original_scores=conv.scores,
                    metadata=conv.metadata, content_hash=conv.content_hash)

    for old, conv in changed:
        Conversation.objects.filter(pk=old.pk).update(**fields_of(conv))
        Turn.objects.filter(conversation_id=old.pk).delete()
    created = Conversation.objects.bulk_create(
        [Conversation(batch=batch, **fields_of(conv)) for conv in new], batch_size=2000
    )
    targets = [(obj.pk, conv) for obj, conv in zip(created, new, strict=True)] + [(o.pk, c) for o, c in changed]
    Turn.objects.bulk_create(
        [Turn(conversation_id=pk, index=index, role=t.role, kind=t.kind, text=t.text, is_rateable=t.is_rateable)
         for pk, conv in targets for index, t in enumerate(conv.turns)],
        batch_size=5000,
    )
    return work_items_create_for_batch(batch=batch)


class FireImporter(Importer):
    """``--kind fire``. Option ``images`` (or ``images_dir``): a zip or a directory with the images (default:
    the zip holding the records, or the records file's directory). Raters per conversation: the batch's overlap
    setting (FIRE's protocol uses 3)."""

    name = KIND
    batch_kind = Batch.Kind.FIRE
    parse = staticmethod(parse_record)

    def validate(self, ctx: ImportContext) -> FirePlan | None:
        report = ctx.report
        images = ctx.options.get("images") or ctx.options.get("images_dir")
        parsed, prepared = validate(Path(ctx.path), images=Path(images) if images else None, report=report,
                                    parse=self.parse)
        batch = ctx.batch
        if batch is not None and batch.kind != self.batch_kind:
            report.add(None, None, f"batch {batch.name!r} exists and is a {batch.get_kind_display()} batch, "
                       f"not {Batch.Kind(self.batch_kind).label}")
        report.counts.update({
            "conversations": len(parsed), "turns": sum(len(c.turns) for c in parsed),
            "rateable turns": sum(t.is_rateable for c in parsed for t in c.turns), "images": len(prepared),
        })
        if not report.ok:
            return None
        new, changed = _check_existing(batch, parsed, report, ctx.update) if batch is not None else (parsed, [])
        if not report.ok:
            return None
        return FirePlan(new=new, changed=changed, images=prepared)

    def has_changes(self, plan: FirePlan) -> bool:
        return plan.has_changes

    def write(self, plan: FirePlan, ctx: ImportContext, batch: Batch) -> None:
        with ctx.report.timed("write"):
            ctx.tick("write", 0, len(plan.new) + len(plan.changed))
            ctx.report.counts["work items"] = _write(batch, plan)
            ctx.report.counts["new conversations"] = len(plan.new)
            ctx.report.counts["updated conversations"] = len(plan.changed)
            ctx.tick("write", len(plan.new) + len(plan.changed), len(plan.new) + len(plan.changed))

    def record_count(self, batch: Batch) -> int:
        return batch.conversations.count()


