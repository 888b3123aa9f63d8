"""FIRE conversations importer: the released FIRE JSON (a list) or JSONL, images from a zip or a directory.

A record (SPEC §5)::

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

import hashlib
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from annotate.importers.common import (
    LIMITS,
    Fields,
    ImportReport,
    Progress,
    Source,
    SourceError,
    ZipSource,
    check_relative_path,
    json_type,
    load_records,
    open_source,
)
from annotate.importers.sources import fetch_remote_image
from annotate.models import Batch, Conversation, Turn, User
from annotate.services.images import (
    MAX_IMAGE_BYTES,
    BadImage,
    PreparedImage,
    image_prepare,
    images_store_bulk,
)
from annotate.services.queue import work_items_create_for_batch

KIND = "fire"
DEFAULT_OVERLAP = 3  # FIRE's protocol: three raters per conversation
MAX_TURNS = 200
ROLE_KIND = {"student": "response", "teacher": "feedback"}
KNOWN_FIELDS = frozenset(
    {"id", "image", "img_path", "question", "groundtruth", "conversations", "source", "round", "score", "split"}
)


@dataclass
class ParsedTurn:
    role: str
    kind: str
    text: str
    is_rateable: bool


@dataclass
class ParsedConversation:
    line: int
    position: int
    external_id: str
    image_name: str
    image_key: str | None  # the name the image was found under (or its URL)
    question: str
    ground_truth: str
    source: str
    split: str
    round: int | None
    scores: list
    metadata: dict
    turns: list[ParsedTurn] = field(default_factory=list)
    content_hash: str = ""


def rateable_flags(roles: list[str]) -> list[bool]:
    """FIRE rates every teacher feedback and every student response after the first."""
    flags, seen_student = [], False
    for role in roles:
        if role == "teacher":
            flags.append(True)
        else:
            flags.append(seen_student)
            seen_student = True
    return flags


def _value_text(fields: Fields, name: str) -> str | None:
    """FIRE wraps question and ground truth as ``{"role": "user", "value": ...}``; a bare string is accepted."""
    value = fields.record.get(name)
    if value is None:
        fields.problem(name, "is required")
        return None
    if isinstance(value, dict):
        inner = value.get("value")
        if isinstance(inner, int | float) and not isinstance(inner, bool):
            inner = str(inner)
        if not isinstance(inner, str) or not inner.strip():
            got = "missing" if inner is None else f"{json_type(inner)}" if not isinstance(inner, str) else "empty"
            fields.problem(f"{name}.value", f"expected a non-empty string, got {got}")
            return None
        return inner
    return fields.text(name, numbers_ok=True)


def _turns(fields: Fields) -> list[ParsedTurn] | None:
    raw = fields.record.get("conversations")
    if raw is None:
        fields.problem("conversations", "is required")
        return None
    if not isinstance(raw, list) or not raw:
        fields.problem("conversations", f"expected a non-empty list of turns, got {json_type(raw)}"
                       + (" (empty)" if raw == [] else ""))
        return None
    if len(raw) > MAX_TURNS:
        fields.problem("conversations", f"has {len(raw)} turns; at most {MAX_TURNS} are allowed")
        return None
    turns, ok = [], True
    for index, turn in enumerate(raw):
        name = f"conversations[{index}]"
        if not isinstance(turn, dict):
            fields.problem(name, f"expected an object with role, type and value, got {json_type(turn)}")
            ok = False
            continue
        role, kind, text = turn.get("role"), turn.get("type"), turn.get("value")
        if role not in ROLE_KIND:
            fields.problem(f"{name}.role", f"{role!r} is not one of student, teacher")
            ok = False
        elif kind is not None and kind != ROLE_KIND[role]:
            fields.problem(f"{name}.type", f"a {role} turn must have type {ROLE_KIND[role]!r}, got {kind!r}")
            ok = False
        if not isinstance(text, str) or not text.strip():
            got = "missing" if text is None else "empty" if isinstance(text, str) else json_type(text)
            fields.problem(f"{name}.value", f"expected the turn's text, got {got}")
            ok = False
        if ok:
            turns.append(ParsedTurn(role=role, kind=ROLE_KIND[role], text=text, is_rateable=False))
    if not ok:
        return None
    for turn, flag in zip(turns, rateable_flags([t.role for t in turns]), strict=True):
        turn.is_rateable = flag
    if not any(t.is_rateable for t in turns):
        fields.problem("conversations", "has nothing to rate: it needs a teacher feedback or a second student response")
        return None
    return turns


def _round(fields: Fields) -> int | None:
    value = fields.record.get("round")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1000:
        fields.problem("round", f"expected a whole number 0-1000, got {json_type(value)} ({value!r})")
        return None
    return value


def _scores(fields: Fields, teacher_turns: int | None) -> list:
    value = fields.record.get("score")
    if value is None:
        return []
    if not isinstance(value, list) or any(
        isinstance(s, bool) or not isinstance(s, int | float) for s in value
    ):
        fields.problem("score", f"expected a list of numbers (the teacher's scores), got {json_type(value)}")
        return []
    if teacher_turns is not None and len(value) != teacher_turns:
        fields.report.warn(f"line {fields.line}, field score: {len(value)} scores for {teacher_turns} teacher turns")
    return value


def _content_hash(conv: ParsedConversation, image_sha: str | None) -> str:
    payload = [conv.question, conv.ground_truth, conv.source, conv.split, conv.round, conv.scores,
               conv.metadata, image_sha, [(t.role, t.text) for t in conv.turns]]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class _Images:
    """Finds, reads and validates each referenced image once."""

    def __init__(self, source: Source | None, report: ImportReport):
        self.source, self.report = source, report
        self.prepared: dict[str, PreparedImage] = {}
        self.failed: set[str] = set()

    def resolve(self, fields: Fields, name: str) -> str | None:
        if name.startswith(("http://", "https://")):
            key = name
        else:
            problem = check_relative_path(name)
            if problem:
                fields.problem("image", problem)
                return None
            if self.source is None:
                fields.problem("image", f"{name!r} cannot be found: no image zip or directory was given")
                return None
            candidates = [name, f"images/{name}", str(fields.record.get("img_path") or "")]
            key = next((c for c in candidates if c and self.source.has(c)), None)
            if key is None:
                fields.problem("image", f"{name!r} is not in {self.source.label}")
                return None
        if key in self.failed:
            fields.problem("image", f"{name!r} is not a usable image (see its first use)")
            return None
        if key not in self.prepared:
            try:
                data = (fetch_remote_image(key, max_bytes=MAX_IMAGE_BYTES) if key.startswith("http")
                        else self.source.read(key, max_bytes=MAX_IMAGE_BYTES))
                self.prepared[key] = image_prepare(data)
            except (SourceError, BadImage) as error:
                self.failed.add(key)
                fields.problem("image", f"{name!r}: {error}")
                return None
        return key


def _parse_record(line: int, position: int, record: Any, images: _Images, report: ImportReport,
                  seen_ids: dict[str, int], unknown: set[str]) -> ParsedConversation | None:
    if not isinstance(record, dict):
        report.add(line, None, f"expected a JSON object (one conversation), got {json_type(record)}")
        return None
    fields = Fields(record, line, report)
    external_id = fields.text("id", required=False, max_len=200, numbers_ok=True) or f"fire-{position:06d}"
    if external_id in seen_ids:
        fields.problem("id", f"duplicate id {external_id!r} (first on line {seen_ids[external_id]})")
    else:
        seen_ids[external_id] = line
    question = _value_text(fields, "question")
    ground_truth = _value_text(fields, "groundtruth")
    turns = _turns(fields)
    source = fields.text("source", required=False, max_len=200, allow_empty=True)
    split = fields.text("split", required=False, max_len=100, allow_empty=True)
    round_ = _round(fields)
    scores = _scores(fields, None if turns is None else sum(t.role == "teacher" for t in turns))
    image_name = fields.text("image", required=False, max_len=500, allow_empty=True) or ""
    if not image_name:
        image_name = fields.text("img_path", required=False, max_len=500, allow_empty=True) or ""
    image_key = images.resolve(fields, image_name) if image_name and not fields.failed else None
    extra = {key: record[key] for key in record.keys() - KNOWN_FIELDS}
    for key in sorted(extra.keys() - unknown):
        unknown.add(key)
        report.warn(f"field {key!r} (first on line {line}) is not a FIRE field; it is kept in the metadata")
    if fields.failed:
        return None
    metadata = {"extra": extra} if extra else {}
    if record.get("img_path") and record.get("img_path") != image_name:
        metadata["img_path"] = record["img_path"]
    return ParsedConversation(
        line=line, position=position, external_id=external_id, image_name=image_name, image_key=image_key,
        question=question, ground_truth=ground_truth, source=source or "", split=split or "", round=round_,
        scores=scores, metadata=metadata, turns=turns,
    )


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
            data = archive.read(candidates[0], max_bytes=LIMITS.max_text_bytes)
        except SourceError as error:
            report.add(None, None, str(error))
            return [], None
        image_source = open_source(images, report) if images else archive
        return load_records(data, report, label=candidates[0]), image_source
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
    return load_records(path.read_bytes(), report, label=path.name), image_source


def validate(
    path: Path, *, images: Path | None, report: ImportReport
) -> tuple[list[ParsedConversation], dict[str, PreparedImage]]:
    """Read and check every record; problems go to the report. Returns the conversations and their images."""
    with report.timed("validate"):
        records, image_source = _records_and_images(path, images, report)
        if len(records) > LIMITS.max_records:
            report.add(None, None, f"{len(records):,} records; at most {LIMITS.max_records:,} are allowed")
            return [], {}
        if not records and report.ok:
            report.add(None, None, "the file holds no conversations")
        image_finder = _Images(image_source, report)
        seen_ids: dict[str, int] = {}
        unknown: set[str] = set()
        parsed = []
        for position, (line, record) in enumerate(records, start=1):
            conv = _parse_record(line, position, record, image_finder, report, seen_ids, unknown)
            if conv is not None:
                sha = image_finder.prepared[conv.image_key].sha256 if conv.image_key else None
                conv.content_hash = _content_hash(conv, sha)
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


def _write(batch: Batch, new: list[ParsedConversation], changed: list, prepared: dict[str, PreparedImage]) -> int:
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


def import_fire(
    path: Path | str,
    *,
    name: str,
    images: Path | str | None = None,
    overlap: int | None = None,
    dry_run: bool = False,
    update: bool = False,
    created_by: User | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Validate a FIRE file, then (unless dry_run or invalid) write it as batch ``name`` in one transaction."""
    path = Path(path)
    report = ImportReport(kind=KIND, batch=name, dry_run=dry_run)
    if overlap is not None and not 1 <= overlap <= 50:
        report.add(None, "overlap", f"raters per conversation must be 1-50, got {overlap}")
    parsed, prepared = validate(path, images=Path(images) if images else None, report=report)
    batch = Batch.objects.filter(name=name).first()
    if batch is not None and batch.kind != Batch.Kind.FIRE:
        report.add(None, None, f"batch {name!r} exists and is a {batch.get_kind_display()} batch, not FIRE")
    new, changed = _check_existing(batch, parsed, report, update) if batch and report.ok else (parsed, [])
    report.counts = {"conversations": len(parsed), "turns": sum(len(c.turns) for c in parsed),
                     "rateable turns": sum(t.is_rateable for c in parsed for t in c.turns), "images": len(prepared)}
    if not report.ok:
        report.status = "invalid"
        return report
    if dry_run:
        report.status = "dry_run"
        return report
    if batch is not None and not new and not changed:
        report.status = "unchanged"
        return report
    if progress:
        progress("write", 0, len(new) + len(changed))
    with report.timed("write"), transaction.atomic():
        if batch is None:
            batch = Batch.objects.create(name=name, kind=Batch.Kind.FIRE, overlap=overlap or DEFAULT_OVERLAP,
                                         status=Batch.Status.READY, created_by=created_by)
        elif overlap is not None:
            Batch.objects.filter(pk=batch.pk).update(overlap=overlap)
        report.counts["work items"] = _write(batch, new, changed, prepared)
        report.counts["new conversations"], report.counts["updated conversations"] = len(new), len(changed)
        report.status = "imported"
        Batch.objects.filter(pk=batch.pk).update(task_count=batch.conversations.count(),
                                                 import_report=report.as_dict())
    if progress:
        progress("write", len(new) + len(changed), len(new) + len(changed))
    return report
