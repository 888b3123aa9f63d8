"""Answer extraction and verification (SPEC §3.2). Pure functions: no ORM, no I/O."""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass

_ANSWER_LINE = re.compile(r"answer\s*(?:is)?\s*[:：]\s*(.+)", re.IGNORECASE)
_NUMBER = re.compile(r"[-−+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-−+]?\.\d+")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


@dataclass(frozen=True)
class Verification:
    extracted: str
    verdict: bool | None  # None: an annotator must judge (manual answer type, or nothing extractable)


def option_letters(options: list[str] | tuple[str, ...]) -> list[str]:
    return [string.ascii_uppercase[i] for i in range(len(options))]


def answer_line(text: str) -> str | None:
    """The text after the last ``Answer:`` marker, if any."""
    matches = _ANSWER_LINE.findall(text or "")
    return matches[-1].strip() if matches else None


def extract_choice(text: str, options: list[str] | tuple[str, ...] = ()) -> str:
    letters = option_letters(options) or list("ABCDEFGH")
    allowed = "".join(letters)
    letter_class = f"[{allowed}{allowed.lower()}]"
    text = text or ""
    candidates = [answer_line(text)] if answer_line(text) else []
    candidates.append(text)
    patterns = [
        rf"^\(?({letter_class})\)?(?:[.):,\s]|$)",  # "C", "(C)", "C.", "C) foo"
        rf"answer\s+is\s*[:：]?\s*(?:option\s+)?\(?({letter_class})\)?(?![A-Za-z])",
        rf"\boption\s+\(?({letter_class})\)?(?![A-Za-z])",
        rf"\(({letter_class})\)",
    ]
    for candidate in candidates:
        stripped = candidate.strip().strip("*").strip()
        for pattern in patterns:
            found = re.findall(pattern, stripped, flags=re.IGNORECASE | re.MULTILINE)
            if found:
                return found[-1].upper()
        # The option's own text, when exactly one option's text appears.
        lowered = _normalize_text(stripped)
        hits = [letters[i] for i, opt in enumerate(options) if opt and _normalize_text(opt) and
                re.search(rf"(?<!\w){re.escape(_normalize_text(opt))}(?!\w)", lowered)]
        if len(hits) == 1:
            return hits[0]
    # A lone letter on the last non-empty line ("... so my pick is\nB").
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and re.fullmatch(rf"\(?({letter_class})\)?[.!]?", lines[-1], flags=re.IGNORECASE):
        return re.sub(r"[^A-Za-z]", "", lines[-1]).upper()
    return ""


def _parse_number(token: str) -> float:
    return float(token.replace(",", "").replace("−", "-"))


def extract_number(text: str) -> str:
    text = text or ""
    line = answer_line(text)
    for candidate in ([line] if line else []) + [text]:
        numbers = _NUMBER.findall(candidate)
        if numbers:
            return numbers[-1].replace(",", "").replace("−", "-").lstrip("+")
    return ""


def numbers_equal(a: str, b: str) -> bool:
    try:
        x, y = _parse_number(a), _parse_number(b)
    except ValueError:
        return False
    return math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-12)


def _normalize_text(text: str) -> str:
    text = (text or "").lower()
    text = "".join(" " if ch in string.punctuation else ch for ch in text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def extract_text(text: str) -> str:
    line = answer_line(text or "")
    return (line if line is not None else (text or "")).strip()


def verify(answer_type: str, text: str, ground_truth: str, options: list[str] | tuple[str, ...] = ()) -> Verification:
    if answer_type == "choice":
        extracted = extract_choice(text, options)
        truth = ground_truth.strip().upper()
        if len(truth) != 1 and options:
            # A ground truth given as option text maps to its letter.
            letters = option_letters(options)
            truth = next((letters[i] for i, o in enumerate(options) if _normalize_text(o) == _normalize_text(ground_truth)), truth)
        return Verification(extracted, bool(extracted) and extracted == truth)
    if answer_type == "number":
        extracted = extract_number(text)
        return Verification(extracted, bool(extracted) and numbers_equal(extracted, ground_truth))
    if answer_type == "text":
        extracted = extract_text(text)
        return Verification(extracted, bool(extracted) and _normalize_text(extracted) == _normalize_text(ground_truth))
    if answer_type == "manual":
        return Verification(extract_text(text)[:500], None)
    raise ValueError(f"unknown answer_type {answer_type!r}")


def contains_ground_truth(feedback: str, answer_type: str, ground_truth: str, options=()) -> bool:
    """Does typed feedback give the answer away? (SPEC §3 step 6: warn before sending in rounds 1–2.)"""
    feedback = feedback or ""
    truth = (ground_truth or "").strip()
    if not truth:
        return False
    if answer_type == "choice":
        letter = truth.upper()
        if re.search(rf"(answer|option|choice|pick|choose|select)\W+(is\W+)?\(?{re.escape(letter)}\)?(?![A-Za-z])",
                     feedback, flags=re.IGNORECASE) or re.search(rf"\({re.escape(letter)}\)", feedback, re.IGNORECASE):
            return True
        letters = option_letters(options)
        if letter in letters:
            option_text = _normalize_text(options[letters.index(letter)])
            if len(option_text) >= 3 and re.search(rf"(?<!\w){re.escape(option_text)}(?!\w)", _normalize_text(feedback)):
                return True
        return False
    if answer_type == "number":
        return any(numbers_equal(token, truth) for token in _NUMBER.findall(feedback))
    normalized_truth = _normalize_text(truth)
    return bool(normalized_truth) and re.search(
        rf"(?<!\w){re.escape(normalized_truth)}(?!\w)", _normalize_text(feedback)
    ) is not None
