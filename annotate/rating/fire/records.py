"""FIRE record parsing: one released-format record → a checked conversation (no database access).

Every problem goes to the import report as ``line N, field F: what is wrong``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from annotate.importkit.common import (
    Fields,
    ImportReport,
    Source,
    SourceError,
    check_relative_path,
    json_type,
)
from annotate.importkit.images import MAX_IMAGE_BYTES, BadImage, PreparedImage, image_prepare
from annotate.importkit.sources import fetch_remote_image

MAX_TURNS = 200
ROLE_KIND = {"student": "response", "teacher": "feedback"}
KNOWN_FIELDS = frozenset(
    {"id", "image", "img_path", "question", "groundtruth", "conversations", "source", "round", "score", "split",
     "recorded_answers"}
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

    @property
    def recorded_answers(self) -> dict:
        return self.metadata.get("recorded_answers") or {}


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


def value_text(fields: Fields, name: str) -> str | None:
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


def content_hash(conv: ParsedConversation, image_sha: str | None) -> str:
    payload = [conv.question, conv.ground_truth, conv.source, conv.split, conv.round, conv.scores,
               conv.metadata, image_sha, [(t.role, t.text) for t in conv.turns]]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class ImageFinder:
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


def record_basics(fields: Fields, position: int, images: ImageFinder, seen_ids: dict[str, int], *,
                  id_prefix: str) -> dict:
    """The fields every conversation record shares: id (or ``<prefix>-<record number>``), source, split, image."""
    external_id = fields.text("id", required=False, max_len=200, numbers_ok=True) or f"{id_prefix}-{position:06d}"
    if external_id in seen_ids:
        fields.problem("id", f"duplicate id {external_id!r} (first on line {seen_ids[external_id]})")
    else:
        seen_ids[external_id] = fields.line
    image_name = fields.text("image", required=False, max_len=500, allow_empty=True) or ""
    if not image_name:
        image_name = fields.text("img_path", required=False, max_len=500, allow_empty=True) or ""
    return {
        "external_id": external_id,
        "source": fields.text("source", required=False, max_len=200, allow_empty=True) or "",
        "split": fields.text("split", required=False, max_len=100, allow_empty=True) or "",
        "image_name": image_name,
        "image_key": images.resolve(fields, image_name) if image_name else None,
    }


def extra_fields(fields: Fields, known: frozenset[str], unknown: set[str], *, label: str) -> dict:
    """Fields outside the schema: kept in the metadata, with one warning per field name."""
    record = fields.record
    extra = {key: record[key] for key in record.keys() - known}
    for key in sorted(extra.keys() - unknown):
        unknown.add(key)
        fields.report.warn(f"field {key!r} (first on line {fields.line}) is not a {label} field; "
                           "it is kept in the metadata")
    metadata = {"extra": extra} if extra else {}
    if record.get("img_path") and record.get("img_path") != (record.get("image") or record.get("img_path")):
        metadata["img_path"] = record["img_path"]
    return metadata


def record_start(line: int, position: int, record: Any, images: ImageFinder, report: ImportReport,
                 seen_ids: dict[str, int], *, id_prefix: str, expected: str) -> tuple[Fields, dict] | None:
    """A record's fields and its basics (id, image, source, split), or None (reported) when it is not an object."""
    if not isinstance(record, dict):
        report.add(line, None, f"expected a JSON object ({expected}), got {json_type(record)}")
        return None
    fields = Fields(record, line, report)
    return fields, record_basics(fields, position, images, seen_ids, id_prefix=id_prefix)


def parse_record(line: int, position: int, record: Any, images: ImageFinder, report: ImportReport,
                 seen_ids: dict[str, int], unknown: set[str]) -> ParsedConversation | None:
    """One released FIRE record."""
    started = record_start(line, position, record, images, report, seen_ids, id_prefix="fire",
                           expected="one conversation")
    if started is None:
        return None
    fields, basics = started
    question = value_text(fields, "question")
    ground_truth = value_text(fields, "groundtruth")
    turns = _turns(fields)
    round_ = _round(fields)
    scores = _scores(fields, None if turns is None else sum(t.role == "teacher" for t in turns))
    metadata = extra_fields(fields, KNOWN_FIELDS, unknown, label="FIRE")
    # What replay models play back in FIRE runs: a student's responses, or a teacher's feedback ("teacher" or
    # "teacher@student"), turn by turn.
    if recorded := fields.recorded_answers(max_entries=MAX_TURNS, entry="entry k is the model's turn k"):
        metadata["recorded_answers"] = recorded
    if fields.failed:
        return None
    return ParsedConversation(line=line, position=position, question=question, ground_truth=ground_truth,
                              round=round_, scores=scores, metadata=metadata, turns=turns, **basics)
