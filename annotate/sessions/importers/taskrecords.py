"""One task record in our canonical shape, shared by the InterFeedback and benchmark-rows importers:
field checks, answer_type vs answer, image references, image validation and the content hash used for idempotency.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import orjson

from annotate.importkit.common import (
    Fields,
    ImportReport,
    Progress,
    Source,
    SourceError,
    check_relative_path,
)
from annotate.importkit.images import MAX_IMAGE_BYTES, BadImage, PreparedImage, image_prepare
from annotate.importkit.sources import fetch_remote_image
from annotate.models import Task
from annotate.sessions.verification import option_letters

ANSWER_TYPES = tuple(Task.AnswerType.values)
KNOWN_FIELDS = frozenset(
    {"id", "category", "question", "options", "answer_type", "answer", "images", "source", "recorded_answers",
     "meta", "gold"}
)
MAX_OPTIONS = 26
MAX_IMAGES_PER_TASK = 16
MAX_QUESTION_CHARS = 100_000
IMAGE_WORKERS = min(8, os.cpu_count() or 1)
IMAGE_CHUNK = 256
NUMBER_PATTERN = re.compile(r"[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+−]?\.\d+(?:[eE][-+]?\d+)?")
_DATA_URL = re.compile(r"^data:image/[\w.+-]+;base64,", re.IGNORECASE)


@dataclass(slots=True)
class ImageRef:
    field: str
    key: str  # images with the same key are read and checked once
    path: str | None = None
    url: str | None = None
    data: bytes | None = None


@dataclass(slots=True)
class TaskRecord:
    line: int
    external_id: str
    category: str
    question: str
    options: list[str]
    answer_type: str
    ground_truth: str
    source: str = ""
    metadata: dict = field(default_factory=dict)
    recorded_answers: dict = field(default_factory=dict)
    is_gold: bool = False
    images: list[ImageRef] = field(default_factory=list)
    image_digests: list[str] = field(default_factory=list)
    content_hash: str = ""

    def comparable(self) -> dict:
        """The content that makes two imports of the same id equal (images by their stored hash)."""
        return {
            "category": self.category, "question": self.question, "options": self.options,
            "answer_type": self.answer_type, "answer": self.ground_truth, "source": self.source,
            "meta": self.metadata, "recorded_answers": self.recorded_answers, "gold": self.is_gold,
            "images": self.image_digests,
        }


def content_hash(comparable: dict) -> str:
    # Canonical JSON (sorted keys) so that key order in a file, or jsonb's reordering, changes nothing.
    return hashlib.sha256(orjson.dumps(comparable, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _check_answer(f: Fields, answer_type: str, answer: str, options: list[str]) -> str | None:
    """The ground truth as stored, or None after reporting why the answer does not fit its answer_type."""
    value = answer.strip()
    if answer_type == "choice":
        if not options:
            f.problem("options", "choice tasks need a list of options")
            return None
        letters = option_letters(options)
        if value.upper() not in letters:
            allowed = f"the {len(options)} options are {letters[0]}–{letters[-1]}" if len(letters) > 1 \
                else "the only option is A"
            f.problem("answer", f"{value!r} is not an option letter; {allowed}")
            return None
        return value.upper()
    if answer_type == "number" and not NUMBER_PATTERN.fullmatch(value):
        f.problem("answer", f"{value!r} is not a number (number tasks need an answer like 42, -3.5 or 1,000)")
        return None
    return answer


def _image_ref(f: Fields, name: str, value, *, allow_bytes: bool) -> ImageRef | None:
    if allow_bytes and isinstance(value, bytes | bytearray):
        data = bytes(value)
        return ImageRef(name, "bytes:" + hashlib.sha256(data).hexdigest(), data=data)
    if not isinstance(value, str):
        f.problem(name, f"expected an image path, got {type(value).__name__}")
        return None
    text = value.strip()
    head = text[:8].lower()
    if head.startswith(("http://", "https://")):
        return ImageRef(name, "url:" + text, url=text)
    if head.startswith("data:") and _DATA_URL.match(text):
        try:
            data = base64.b64decode(text.split(",", 1)[1], validate=True)
        except (binascii.Error, ValueError):
            f.problem(name, "the data: URL is not valid base64")
            return None
        return ImageRef(name, "bytes:" + hashlib.sha256(data).hexdigest(), data=data)
    if "://" in text and re.match(r"^[a-z][a-z0-9+.-]*://", text, re.IGNORECASE):
        f.problem(name, f"{text[:60]!r}: only paths inside the upload or http(s) URLs are allowed")
        return None
    problem = check_relative_path(text)
    if problem:
        f.problem(name, problem)
        return None
    return ImageRef(name, "path:" + text, path=text)


def task_record(raw: dict, line: int, report: ImportReport, *, max_rounds: int, unknown_seen: set[str],
                unit: str = "line", labels: dict[str, str] | None = None, allow_bytes: bool = False,
                warn_unknown: bool = True) -> TaskRecord | None:
    """Validate one canonical record; None (with its problems in the report) if anything is wrong."""
    f = Fields(raw, line, report, unit=unit, labels=labels)
    if warn_unknown:
        f.warn_unknown(KNOWN_FIELDS, unknown_seen)
    external_id = f.text("id", max_len=200, numbers_ok=True)
    category = f.text("category", max_len=100)
    question = f.text("question", max_len=MAX_QUESTION_CHARS)
    options = f.text_list("options", max_items=MAX_OPTIONS)
    answer_type = f.one_of("answer_type", ANSWER_TYPES)
    answer = f.text("answer", numbers_ok=True)
    ground_truth = None
    if answer_type is not None and answer is not None and options is not None:
        ground_truth = _check_answer(f, answer_type, answer, options)
    images = []
    raw_images = raw.get("images")
    if raw_images is not None and not isinstance(raw_images, list):
        f.problem("images", f"expected a list of image paths, got {type(raw_images).__name__}")
    elif raw_images:
        if len(raw_images) > MAX_IMAGES_PER_TASK:
            f.problem("images", f"has {len(raw_images)} images; at most {MAX_IMAGES_PER_TASK} are allowed")
        for index, value in enumerate(raw_images[:MAX_IMAGES_PER_TASK]):
            ref = _image_ref(f, f"images[{index}]", value, allow_bytes=allow_bytes)
            if ref is not None:
                images.append(ref)
    source = f.text("source", required=False, max_len=200, allow_empty=True)
    metadata = f.mapping("meta")
    recorded = f.recorded_answers(max_entries=max_rounds + 1,
                                  entry=f"entry k is the answer in round k, 0..{max_rounds}")
    is_gold = f.boolean("gold")
    if f.failed:
        return None
    return TaskRecord(
        line=line, external_id=external_id.strip(), category=category.strip(), question=question,
        options=options, answer_type=answer_type, ground_truth=ground_truth, source=source or "",
        metadata=metadata, recorded_answers=recorded, is_gold=is_gold, images=images,
    )


class DuplicateIds:
    """Reports a repeated id at its line, naming the line that used it first. Checked on the raw value, so a
    record that is broken in other ways still takes part."""

    def __init__(self, report: ImportReport, *, unit: str = "line", label: str = "id"):
        self.report, self.unit, self.label = report, unit, label
        self.first: dict[str, int] = {}

    def check(self, line: int, value) -> None:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return
        key = str(value).strip()
        seen = self.first.setdefault(key, line)
        if seen != line:
            self.report.add(line, self.label, f"duplicate id {key!r} (first used on {self.unit} {seen})",
                            unit=self.unit)


def _load(ref: ImageRef, source: Source | None) -> bytes:
    if ref.data is not None:
        return ref.data
    if ref.url is not None:
        return fetch_remote_image(ref.url, max_bytes=MAX_IMAGE_BYTES)
    if source is None:
        raise SourceError(f"{ref.path!r}: no zip or image directory was given")
    return source.read(ref.path, max_bytes=MAX_IMAGE_BYTES)


def _prepare_or_reason(data: bytes) -> PreparedImage | str:
    try:
        return image_prepare(data)
    except BadImage as error:
        return str(error)


def images_prepare(records: list[TaskRecord], source: Source | None, report: ImportReport, *,
                   progress: Progress | None = None, unit: str = "line",
                   labels: dict[str, str] | None = None) -> dict[str, PreparedImage]:
    """Read, check and re-encode every referenced image once; fill each record's ``image_digests``.

    Identical bytes under different names are decoded once (keyed by the raw bytes' hash). Decoding and
    re-encoding run on a few threads: Pillow releases the GIL while it works.
    """
    users: dict[str, list[tuple[TaskRecord, ImageRef]]] = defaultdict(list)
    for record in records:
        for ref in record.images:
            users[ref.key].append((record, ref))
    by_raw: dict[str, PreparedImage | str] = {}
    digest_of: dict[str, str] = {}
    prepared: dict[str, PreparedImage] = {}
    keys = list(users)
    base_label = (labels or {}).get("images", "images")

    def fail(key: str, message: str) -> None:
        for record, ref in users[key]:
            report.add(record.line, base_label + ref.field.removeprefix("images"), message, unit=unit)

    if progress and keys:
        progress("images", 0, len(keys))
    with ThreadPoolExecutor(max_workers=IMAGE_WORKERS) as pool:
        for start in range(0, len(keys), IMAGE_CHUNK):
            chunk, raw_of, todo = keys[start:start + IMAGE_CHUNK], {}, {}
            for key in chunk:  # reads stay sequential: one zip file handle
                try:
                    data = _load(users[key][0][1], source)
                except SourceError as error:
                    fail(key, str(error))
                    continue
                raw_of[key] = raw = hashlib.sha256(data).hexdigest()
                if raw not in by_raw:
                    todo[raw] = data
            by_raw.update(zip(todo, pool.map(_prepare_or_reason, todo.values()), strict=True))
            for key, raw in raw_of.items():
                outcome = by_raw[raw]
                if isinstance(outcome, str):
                    first = users[key][0][1]
                    fail(key, f"{first.path or (first.url or '')[:80] or 'embedded image'!r}: {outcome}")
                else:
                    prepared[outcome.sha256] = outcome
                    digest_of[key] = outcome.sha256
            if progress:
                progress("images", start + len(chunk), len(keys))
    for record in records:
        record.image_digests = [digest_of.get(ref.key, "") for ref in record.images]
        record.content_hash = content_hash(record.comparable())
    return prepared
