"""The questions a crowd study asks besides its items: screening (comprehension) questions with a known answer, and
the pre- and post-study questionnaires. Their definitions as a researcher writes them (JSON: in the import
settings, on the batch's study page, through the API) are checked here, and so are a participant's answers.

A screening question: ``{"id": "q1", "text": "...", "options": ["...", "..."], "answer": "...", "explanation":
"..."}`` (``answer`` is one of the options; ``id`` defaults to q1, q2, ...).

A questionnaire question: ``{"id": "age", "type": "...", "text": "...", "required": true}`` with, by type:
``likert`` (``scale`` 2-11 points, default 5; ``labels``: the two ends' words), ``single`` and ``multiple``
(``options``), ``number`` (``min``, ``max``), ``text`` (``max_length``, default 2000).
"""

from __future__ import annotations

import math
import re
from typing import Any

from django.utils.translation import gettext as _

from annotate.errors import InvalidFields

QUESTION_TYPES = ("likert", "single", "multiple", "number", "text")
ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_QUESTIONS = 100
MAX_TEXT = 5000
MAX_OPTIONS = 30
MAX_OPTION = 200
DEFAULT_TEXT_ANSWER = 2000
Problems = list[tuple[str, str]]


def _text(value: Any, where: str, problems: Problems, *, required: bool = True, limit: int = MAX_TEXT) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        problems.append((where, "expected text"))
        return ""
    if len(value) > limit:
        problems.append((where, f"{len(value):,} characters; at most {limit:,}"))
    return value.strip()


def _options(value: Any, where: str, problems: Problems) -> list[str]:
    if not isinstance(value, list) or not 2 <= len(value) <= MAX_OPTIONS:
        problems.append((where, f"expected a list of 2 to {MAX_OPTIONS} options"))
        return []
    options = [_text(option, f"{where}[{i}]", problems, limit=MAX_OPTION) for i, option in enumerate(value)]
    if len(set(options)) != len(options):
        problems.append((where, "options must differ from one another"))
    return options


def _question_list(value: Any, name: str, problems: Problems) -> list[dict[str, Any]]:
    if value in (None, ""):
        return []
    if not isinstance(value, list) or not all(isinstance(q, dict) for q in value):
        problems.append((name, "expected a list of questions (JSON objects)"))
        return []
    if len(value) > MAX_QUESTIONS:
        problems.append((name, f"{len(value)} questions; at most {MAX_QUESTIONS}"))
    return value


def _question_id(raw: dict[str, Any], index: int, where: str, seen: set[str], problems: Problems) -> str:
    qid = raw.get("id", f"q{index + 1}")
    if not isinstance(qid, str) or not ID_PATTERN.match(qid):
        problems.append((f"{where}.id", "1-64 letters, digits, '-' or '_'"))
        return f"q{index + 1}"
    if qid in seen:
        problems.append((f"{where}.id", f"{qid!r} is used twice"))
    seen.add(qid)
    return qid


def _unknown_keys(raw: dict[str, Any], known: set[str], where: str, problems: Problems) -> None:
    for key in sorted(set(raw) - known):
        problems.append((f"{where}.{key}", f"unknown key; known: {', '.join(sorted(known))}"))


def screening_clean(value: Any, problems: Problems, name: str = "screening") -> list[dict[str, Any]]:
    """Checked screening questions; problems named ``screening[i].field``."""
    clean: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, raw in enumerate(_question_list(value, name, problems)):
        where = f"{name}[{index}]"
        _unknown_keys(raw, {"id", "text", "options", "answer", "explanation"}, where, problems)
        question: dict[str, Any] = {
                    "id": _question_id(raw, index, where, seen, problems),
                    "text": _text(raw.get("text"), f"{where}.text", problems),
                    "options": _options(raw.get("options"), f"{where}.options", problems),
                    "explanation": _text(raw.get("explanation"), f"{where}.explanation", problems, required=False)}
        answer = raw.get("answer")
        if question["options"] and answer not in question["options"]:
            problems.append((f"{where}.answer", "must be one of the question's options, written the same way"))
        question["answer"] = answer
        clean.append(question)
    return clean


def _int_field(raw: dict[str, Any], key: str, where: str, problems: Problems, low: int, high: int,
               default: int | None) -> int | None:
    value = raw.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.append((f"{where}.{key}", f"a whole number from {low} to {high}"))
        return default
    return value


def _number_field(raw: dict[str, Any], key: str, where: str, problems: Problems) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        problems.append((f"{where}.{key}", "expected a number"))
        return None
    return value


def survey_clean(value: Any, problems: Problems, name: str) -> list[dict[str, Any]]:
    """Checked questionnaire questions; problems named ``<name>[i].field``."""
    clean: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, raw in enumerate(_question_list(value, name, problems)):
        where = f"{name}[{index}]"
        kind = raw.get("type")
        if kind not in QUESTION_TYPES:
            problems.append((f"{where}.type", f"one of {', '.join(QUESTION_TYPES)}"))
            continue
        required = raw.get("required", True)
        if not isinstance(required, bool):
            problems.append((f"{where}.required", "true or false"))
        question: dict[str, Any] = {"id": _question_id(raw, index, where, seen, problems), "type": kind,
                                    "text": _text(raw.get("text"), f"{where}.text", problems),
                                    "required": required is not False}
        known = {"id", "type", "text", "required"}
        if kind == "likert":
            known |= {"scale", "labels"}
            question["scale"] = _int_field(raw, "scale", where, problems, 2, 11, 5)
            labels: Any = raw.get("labels", [])
            if not isinstance(labels, list) or len(labels) not in (0, 2):
                problems.append((f"{where}.labels", "two words: the low end's and the high end's"))
                labels = []
            question["labels"] = [_text(label, f"{where}.labels", problems, limit=MAX_OPTION) for label in labels]
        elif kind in ("single", "multiple"):
            known |= {"options"}
            question["options"] = _options(raw.get("options"), f"{where}.options", problems)
        elif kind == "number":
            known |= {"min", "max"}
            question["min"] = _number_field(raw, "min", where, problems)
            question["max"] = _number_field(raw, "max", where, problems)
            if question["min"] is not None and question["max"] is not None and question["min"] > question["max"]:
                problems.append((f"{where}.min", "greater than max"))
        else:
            known |= {"max_length"}
            question["max_length"] = _int_field(raw, "max_length", where, problems, 1, 20_000, DEFAULT_TEXT_ANSWER)
        _unknown_keys(raw, known, where, problems)
        clean.append(question)
    return clean


# --- a participant's answers -------------------------------------------------------------------------------------


def _answer(question: dict[str, Any], value: Any) -> tuple[Any, str | None]:
    """(the answer as stored, None) or (None, what is wrong, in the participant's language)."""
    kind = question["type"]
    if kind == "multiple":
        values = value if isinstance(value, list) else [value]
        chosen = [v for v in values if v not in (None, "")]
        if any(v not in question["options"] for v in chosen):
            return None, _("Choose among the options shown.")
        return [o for o in question["options"] if o in chosen], None  # in the options' order, each once
    if kind == "single":
        return (value, None) if value in question["options"] else (None, _("Choose one of the options shown."))
    if kind == "likert":
        try:
            point = int(value)
        except (TypeError, ValueError):
            point = 0
        if str(point) != str(value).strip() or not 1 <= point <= question["scale"]:
            return None, _("Choose a point from 1 to %(scale)s.") % {"scale": question["scale"]}
        return point, None
    if kind == "number":
        try:
            number = float(str(value).strip().replace(",", "."))
        except ValueError:
            return None, _("Enter a number.")
        low, high = question.get("min"), question.get("max")
        if not math.isfinite(number) or (low is not None and number < low) or (high is not None and number > high):
            return None, _("Enter a number from %(low)s to %(high)s.") % {
                "low": "…" if low is None else low, "high": "…" if high is None else high}
        return int(number) if number.is_integer() else number, None
    text = str(value).strip()
    if len(text) > question["max_length"]:
        return None, _("At most %(limit)s characters.") % {"limit": question["max_length"]}
    return text, None


def _blank(value: Any) -> bool:
    return value is None or value == "" or value == [] or (isinstance(value, list) and all(v in (None, "")
                                                                                          for v in value))


def survey_answers_clean(questions: list[dict[str, Any]], given: dict[str, Any]) -> dict[str, Any]:
    """A participant's answers, checked against the questions: every question present (None when an optional one
    was left blank). Raises InvalidFields naming each question's id with what is wrong."""
    if not isinstance(given, dict):
        raise InvalidFields([("answers", _("Expected the answers by question id."))])
    problems: Problems = []
    known = {q["id"] for q in questions}
    for key in sorted(set(given) - known):
        problems.append((key, _("No such question in this questionnaire.")))
    clean: dict[str, Any] = {}
    for question in questions:
        value = given.get(question["id"])
        if _blank(value):
            if question["required"]:
                problems.append((question["id"], _("Please answer this question.")))
            clean[question["id"]] = None
            continue
        clean[question["id"]], problem = _answer(question, value)
        if problem:
            problems.append((question["id"], problem))
    if problems:
        raise InvalidFields(problems)
    return clean
