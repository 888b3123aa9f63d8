"""Answer extraction and verification of a model's answer. Pure functions: no ORM, no I/O."""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass

from annotate.wording import phrase

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


# --- The leak check -----------------------------------------------------------------------------------------------
# Feedback typed before the last round that STATES an answer is flagged whatever the answer's value: the check
# never reads the ground truth, or narrowing a list of guesses would find the answer in a few requests.

_LETTER_CONTEXT = (
    r"(?:answer|option|choice|letter|pick|choose|select|go\s+with|is\s+it|it\s*(?:'|’)?s|it\s+is|should\s+be|"
    r"must\s+be)"
)
# Words after "it's" / "should be" that describe the model's answer or the picture, not an answer.
_NOT_AN_ANSWER = frozenset("""
    not wrong incorrect right correct close closer almost nearly off in on at under over above below behind near next
    inside outside between hard tricky difficult easy unclear possible impossible likely unlikely more less too very
    about because missing better worse fine ok okay true false there here what how why where when still also just only
    important clear obvious similar different same careful done counted checked your you my
""".split())
_ADVERBS = re.compile(r"^(?:actually|really|clearly|definitely|probably|obviously|simply)\s+", re.IGNORECASE)
_STATEMENTS = [
    # "the answer is …", "the correct answer should be …", "answer: …"
    re.compile(r"(?<!your\s)(?<!my\s)\b(?:the\s+)?(?:(?:correct|right|real|true|actual|final)\s+)?answer\s*"
               r"(?:is|should\s+be|would\s+be|must\s+be|=|:)\s*(?P<said>[^.;!?\n]+)", re.IGNORECASE),
    # "it's …", "it is …", "that should be …", "the total must be …" (not "it's not …")
    re.compile(r"\b(?:it|that|this|the\s+(?:result|total|count|value|number))\s*"
               r"(?:(?:'|’)s|\s+is|\s+should\s+be|\s+must\s+be|\s+would\s+be|\s+equals)\s+"
               r"(?!not\b|n't\b)(?P<said>[^.;!?,\n]+)", re.IGNORECASE),
    # "is it …?"
    re.compile(r"\bis\s+it\s+(?P<said>[^.;!?\n]+)\?", re.IGNORECASE),
]
_MAX_STATEMENT_WORDS = 6  # a longer clause after "it's" is a description ("it's in the row below the …")
_NUMBER_WORDS = {
    # "one" is left out: "the one on the left", "one more time" are everywhere in feedback.
    "zero": "0", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13", "fourteen": "14", "fifteen": "15",
    "sixteen": "16", "seventeen": "17", "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30",
    "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90", "hundred": "100",
}
_NUMBER_WORD = re.compile(rf"\b({'|'.join(_NUMBER_WORDS)})\b", re.IGNORECASE)
MIN_OPTION_TEXT_CHARS = 3  # shorter option texts ("no", "5 m") match too much ordinary text; numbers always count


@dataclass(frozen=True)
class StatedAnswer:
    """Something the feedback states as an answer: ``description`` for people (from the typed text only; English,
    as stored, and translated where the warning shows it: annotate.wording) and ``value``, the text that `verify`
    checks against the ground truth server-side."""

    description: str
    value: str


def detect_stated_answers(feedback: str, answer_type: str, options: list[str] | tuple[str, ...] = ()) -> list[StatedAnswer]:
    """What the feedback states as an answer, in order of appearance, without duplicates. Never reads the ground
    truth: the same shape of feedback is flagged whether its value is right or wrong.

    - choice: option letters in an answer-like context ("option C", "(C)", "is it C or D", a lone "C"), and
      option texts;
    - number: every number in the feedback (digits, or a spelled-out number from two to a hundred), whatever
      its value — a list of guesses is as telling as one;
    - every kind: "the answer is …", "it's …", "should be …", "is it …?" statements.
    """
    feedback = feedback or ""
    found: list[StatedAnswer] = []
    if answer_type == "choice":
        found += _stated_letters(feedback, options) + _stated_option_texts(feedback, options)
    elif answer_type == "number":
        found += _stated_numbers(feedback)
    found += [s for s in _statements(feedback) if not _covered(s, found, answer_type, options)]
    unique: dict[str, StatedAnswer] = {}
    for stated in found:
        unique.setdefault(stated.description.lower(), stated)
    return list(unique.values())


def stated_answers(feedback: str, answer_type: str, options: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Human-readable descriptions of what the feedback states as an answer (see `detect_stated_answers`)."""
    return [s.description for s in detect_stated_answers(feedback, answer_type, options)]


def stated_answer_correct(stated: list[StatedAnswer], answer_type: str, ground_truth: str,
                          options: list[str] | tuple[str, ...] = ()) -> bool | None:
    """Server-side record only: does any stated answer verify against the ground truth? Every stated value is
    checked (no early exit), so right and wrong statements cost the same. For ``manual`` tasks the reference is a
    judging guide: a stated text equal to it counts as right, anything else is unknown (None)."""
    if answer_type == "manual":
        hits = [verify("text", s.value, ground_truth).verdict for s in stated]
        return True if any(hits) else None
    return any([bool(verify(answer_type, s.value, ground_truth, options).verdict) for s in stated])


def _letters(options: list[str] | tuple[str, ...]) -> str:
    return "".join(option_letters(options) or list("ABCDEFGH"))


def _stated_letters(feedback: str, options) -> list[StatedAnswer]:
    letters = _letters(options)
    upper = rf"\(?[{letters}]\)?(?![A-Za-z'’])"  # "C", "(C)"; an upper-case letter anywhere after the context
    lower = rf"\(?[{letters.lower()}]\)?(?=\s*(?:[.,;:!?)]|$))"  # "c." at a clause's end, not the article "a cat"
    token = rf"(?:{upper}|{lower}|\([{letters}{letters.lower()}]\))"
    series = rf"{token}(?:\s*(?:,|/|\bor\b|\band\b)\s*(?:option\s+)?{token})*"
    spans = [m.group("series") for m in re.finditer(
        rf"(?i:{_LETTER_CONTEXT})\s*[:：]?\s*(?i:(?:is|should\s+be|would\s+be|must\s+be)\s+)?"
        rf"(?i:(?:option|choice|letter)\s+)?(?P<series>{series})", feedback)]
    spans += re.findall(rf"\(([{letters}{letters.lower()}])\)", feedback)  # "(C)" anywhere
    spans += re.findall(rf"\b([{letters}])\s+(?i:is\s+(?:the\s+)?(?:correct|right|answer))", feedback)
    whole = feedback.strip().strip(".!?* ")
    if re.fullmatch(rf"\(?[{letters}{letters.lower()}]\)?", whole):
        spans.append(whole)
    found = []
    for span in spans:
        for letter in re.findall(rf"(?<![A-Za-z])[{letters}{letters.lower()}](?![A-Za-z])", span):
            found.append(StatedAnswer(phrase("option %(letter)s", letter=letter.upper()), letter.upper()))
    return found


def _stated_option_texts(feedback: str, options) -> list[StatedAnswer]:
    normalized = _normalize_text(feedback)
    numbers = _NUMBER.findall(feedback)
    found = []
    for letter, option in zip(option_letters(options), options, strict=True):
        text = _normalize_text(str(option))
        if _NUMBER.fullmatch(str(option).strip()):
            hit = any(numbers_equal(token, str(option).strip()) for token in numbers)
        else:
            hit = len(text) >= MIN_OPTION_TEXT_CHARS and re.search(rf"(?<!\w){re.escape(text)}(?!\w)", normalized)
        if hit:
            found.append(StatedAnswer(phrase("an option's text: '%(text)s'", text=str(option).strip()), letter))
    return found


def _stated_numbers(feedback: str) -> list[StatedAnswer]:
    found = []
    # Not a number glued to a word ("storm-0", "row2", "v1.5"): a name or a label, not a stated value.
    for match in re.finditer(rf"(?<![\w.])(?<!\w[-−+])(?:{_NUMBER.pattern})|{_NUMBER_WORD.pattern}", feedback,
                             flags=re.IGNORECASE):
        token = match.group(0)
        value = _NUMBER_WORDS.get(token.lower(), token.replace(",", "").replace("−", "-").lstrip("+"))
        found.append(StatedAnswer(phrase("the number %(number)s", number=token), value))
    return found


def _statements(feedback: str) -> list[StatedAnswer]:
    found = []
    for pattern in _STATEMENTS:
        for match in pattern.finditer(feedback):
            said = _ADVERBS.sub("", match.group("said").strip().strip("\"'“”‘’*").strip())
            words = [w.strip(string.punctuation).lower() for w in said.split()]
            first = next((w for w in words if w not in ("a", "an", "the")), "")
            if not first or first in _NOT_AN_ANSWER or len(words) > _MAX_STATEMENT_WORDS:
                continue
            statement = " ".join(match.group(0).split()).rstrip("?").strip()
            found.append(StatedAnswer(phrase("'%(statement)s'", statement=statement), said))
    return found


def _covered(statement: StatedAnswer, found: list[StatedAnswer], answer_type: str, options) -> bool:
    """A statement whose value is already listed ("the answer is 7" after "the number 7")."""
    if answer_type == "number":
        return bool(_stated_numbers(statement.value))
    if answer_type == "choice":
        letter = extract_choice(statement.value, options)
        return bool(letter) and any(s.value == letter for s in found)
    return False
