"""Preference batches (MM-RLHF-style rating): a question, an optional image, and 2-10 candidate responses.

One record per line (JSONL) or a JSON list, images from a zip or a directory, like the FIRE importer::

    {"id": "p-001", "image": "chart.png", "question": "What does the chart show?",
     "responses": ["It shows ...", "A bar chart of ...", "..."], "source": "mm-rlhf", "split": "dev"}

Each response becomes a rateable ``candidate`` turn; annotators score helpfulness, faithfulness and ethics 1-5 with
a reason, and rank the candidates with ties (``1>2=3``).
"""

from __future__ import annotations

from typing import Any

from annotate.importkit.common import Fields, ImportReport, json_type
from annotate.models import Batch, Turn
from annotate.rating.fire.importer import FireImporter
from annotate.rating.fire.records import (
    ImageFinder,
    ParsedConversation,
    ParsedTurn,
    extra_fields,
    record_start,
    value_text,
)

KNOWN_FIELDS = frozenset({"id", "image", "img_path", "question", "responses", "models", "groundtruth", "source",
                          "split"})
MIN_CANDIDATES, MAX_CANDIDATES = 2, 10


def _candidates(fields: Fields) -> list[ParsedTurn] | None:
    raw = fields.record.get("responses")
    if not isinstance(raw, list) or not MIN_CANDIDATES <= len(raw) <= MAX_CANDIDATES:
        got = "missing" if raw is None else f"{len(raw)} responses" if isinstance(raw, list) else json_type(raw)
        fields.problem("responses", f"expected a list of {MIN_CANDIDATES}-{MAX_CANDIDATES} responses, got {got}")
        return None
    turns = []
    for index, item in enumerate(raw):
        text = item.get("value") if isinstance(item, dict) else item
        if not isinstance(text, str) or not text.strip():
            fields.problem(f"responses[{index}]", "expected the response text (a non-empty string)")
            continue
        turns.append(ParsedTurn(role=Turn.Role.MODEL, kind=Turn.Kind.CANDIDATE, text=text, is_rateable=True))
    return turns if len(turns) == len(raw) else None


def _candidate_models(fields: Fields, count: int) -> list[str] | None:
    """The optional ``models`` list: which model wrote each response, in order (the preference report's labels)."""
    raw = fields.record.get("models")
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) != count or not all(isinstance(m, str) and m.strip() for m in raw):
        got = f"{len(raw)} entries" if isinstance(raw, list) else json_type(raw)
        fields.problem("models", f"expected one model name per response ({count} non-empty strings), got {got}")
        return None
    return [m.strip() for m in raw]


def parse_preference_record(line: int, position: int, record: Any, images: ImageFinder, report: ImportReport,
                            seen_ids: dict[str, int], unknown: set[str]) -> ParsedConversation | None:
    started = record_start(line, position, record, images, report, seen_ids, id_prefix="pref",
                           expected="one question with its responses")
    if started is None:
        return None
    fields, basics = started
    question = value_text(fields, "question")
    ground_truth = value_text(fields, "groundtruth") if record.get("groundtruth") is not None else ""
    turns = _candidates(fields)
    models = _candidate_models(fields, len(turns)) if turns else None
    metadata = extra_fields(fields, KNOWN_FIELDS, unknown, label="preference")
    if models:
        metadata["models"] = models
    if fields.failed:
        return None
    return ParsedConversation(line=line, position=position, question=question, ground_truth=ground_truth,
                              round=None, scores=[], metadata=metadata, turns=turns, **basics)


class PreferenceImporter(FireImporter):
    """``--kind preference``: the FIRE importer's reading, checks and writing with the preference record schema."""

    name = "preference"
    batch_kind = Batch.Kind.PREFERENCE
    parse = staticmethod(parse_preference_record)
