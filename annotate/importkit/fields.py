"""Typed reads of one record's fields for the importers: every failure becomes ``line N, field F: ...``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from annotate.importkit.common import ImportReport


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _shown(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Two model names (64 each) and a kind: "<receiver>:<provider>:detail", "<provider>:feedback:again".
MAX_RECORDED_KEY = 150
NUL_MESSAGE = "contains a NUL character (\\u0000), which the database cannot store"


class Fields:
    """Typed reads of one record's fields; every failure becomes a problem at the record's line."""

    def __init__(self, record: dict, line: int, report: ImportReport, *, unit: str = "line",
                 labels: dict[str, str] | None = None):
        self.record, self.line, self.report, self.unit = record, line, report, unit
        self.labels = labels or {}  # canonical name -> the name the admin's file uses (rows: a column)
        self.failed = False

    def label(self, name: str) -> str:
        base, bracket, rest = name.partition("[")
        return self.labels.get(base, base) + bracket + rest

    def problem(self, name: str | None, message: str) -> None:
        self.failed = True
        self.report.add(self.line, self.label(name) if name else None, message, unit=self.unit)

    def present(self, name: str) -> bool:
        return self.record.get(name) is not None

    def text(self, name: str, *, required: bool = True, max_len: int | None = None, allow_empty: bool = False,
             numbers_ok: bool = False, default: str = "") -> str | None:
        value = self.record.get(name)
        if value.__class__ is str and (max_len is None or len(value) <= max_len) and (
                allow_empty or (value and not value.isspace())) and "\x00" not in value:
            return value  # the common case, checked without allocating
        if value is None:
            if required:
                self.problem(name, "is required")
                return None
            return default
        if numbers_ok and isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            self.problem(name, f"expected a string, got {json_type(value)} ({_shown(value)})")
            return None
        if not allow_empty and not value.strip():
            self.problem(name, "must not be empty")
            return None
        if max_len is not None and len(value) > max_len:
            self.problem(name, f"is {len(value):,} characters long; at most {max_len:,} are allowed")
            return None
        if "\x00" in value:
            self.problem(name, NUL_MESSAGE)
            return None
        return value

    def text_list(self, name: str, *, max_items: int | None = None, allow_empty_items: bool = False) -> list | None:
        value = self.record.get(name)
        if value is None:
            return []
        if not isinstance(value, list):
            self.problem(name, f"expected a list of strings, got {json_type(value)} ({_shown(value)})")
            return None
        if max_items is not None and len(value) > max_items:
            self.problem(name, f"has {len(value)} items; at most {max_items} are allowed")
            return None
        ok = True
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.problem(f"{name}[{index}]", f"expected a string, got {json_type(item)} ({_shown(item)})")
                ok = False
            elif not allow_empty_items and not item.strip():
                self.problem(f"{name}[{index}]", "must not be empty")
                ok = False
            elif "\x00" in item:
                self.problem(f"{name}[{index}]", NUL_MESSAGE)
                ok = False
        return value if ok else None

    def mapping(self, name: str) -> dict | None:
        value = self.record.get(name)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(name, f"expected an object, got {json_type(value)} ({_shown(value)})")
            return None
        if value and b"\\u0000" in orjson.dumps(value):
            self.problem(name, NUL_MESSAGE)
            return None
        return value

    def recorded_answers(self, *, max_entries: int, entry: str) -> dict | None:
        """``recorded_answers``: a key (a model name, or names and a kind joined by ":", e.g.
        "<receiver>:<provider>:detail"; 1-150 characters) -> a list of 1..max_entries strings, what a replay model
        plays back (``entry`` says what entry k is)."""
        value = self.mapping("recorded_answers")
        if not value:
            return value
        ok = True
        for model, answers in value.items():
            name = f"recorded_answers.{model}"
            if not model.strip() or len(model) > MAX_RECORDED_KEY:
                self.problem(name, f"keys must be 1–{MAX_RECORDED_KEY} characters (a model name, or names and a "
                                   "kind joined by ':')")
                ok = False
            elif not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
                self.problem(name, f"expected a list of answer strings ({entry})")
                ok = False
            elif not 1 <= len(answers) <= max_entries:
                self.problem(name, f"has {len(answers)} answers; 1 to {max_entries} are allowed ({entry})")
                ok = False
        return value if ok else None

    def boolean(self, name: str, default: bool = False) -> bool | None:
        value = self.record.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problem(name, f"expected true or false, got {json_type(value)} ({_shown(value)})")
            return None
        return value

    def one_of(self, name: str, allowed: tuple[str, ...]) -> str | None:
        value = self.text(name)
        if value is None:
            return None
        if value not in allowed:
            self.problem(name, f"{_shown(value)} is not one of {', '.join(allowed)}")
            return None
        return value

    def warn_unknown(self, known: frozenset[str], seen: set[str]) -> None:
        """Unknown keys are ignored with one warning per key name, not one per line."""
        for key in self.record.keys() - known - seen:
            seen.add(key)
            self.report.warn(f"field {key!r} (first on {self.unit} {self.line}) is not a known field and was ignored")
