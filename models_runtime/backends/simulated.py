"""An offline demo "student" that answers from the task itself: wrong first, right once told.

It never runs a model. It is for demos and tests only, and the app labels it as simulated wherever it
shows up. Settings:

- ``correct_from_round`` (int or None): from this round on it answers correctly even without being told.
- ``chunk_delay`` (float seconds, default 0.02): pause between streamed words, so the demo looks live.
- ``fail`` ("permanent"): every call raises PermanentModelError.
- ``fail_transient_times`` (int): the first n calls per (task_id, round_index) in this process raise
  TransientModelError, to exercise retries.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterator

from models_runtime.base import (
    Backend,
    BackendSettings,
    ModelRequest,
    PermanentModelError,
    Stream,
    TaskContext,
    TransientModelError,
)
from models_runtime.textstream import count_words, stream_words

SETTINGS_KEYS = {"correct_from_round", "chunk_delay", "fail", "fail_transient_times"}

WRONG_PHRASES = (
    "a red circle",
    "the one on the left",
    "two of them",
    "it is a cat",
    "blue",
    "no",
    "yes",
    "I am not sure",
)
FIRST_TRY_REASONS = (
    "Looking at the image and the question, the most likely answer seems clear.",
    "I compared the options with what the image shows.",
    "Reading the question carefully, I went with my first impression.",
)
STILL_WRONG_REASONS = (
    "Taking the feedback into account, I looked again at the details.",
    "I reconsidered my earlier reasoning after the feedback.",
)
CORRECTED_REASONS = (
    "Thanks for the feedback; looking again, I see where I went wrong.",
    "With the hint in mind, I checked the question once more.",
)
# Used when the ground truth is a common word that every sentence above contains (e.g. "the").
FALLBACK_REASONS = ("My best guess follows.", "Hmm.")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_OPTION_LABEL = re.compile(r"^\(?[A-Za-z][.):]\s+")
_LETTER_GT = re.compile(r"^\(?([A-Za-z])[.):]?$")


class SimulatedBackend(Backend):
    name = "simulated"

    # Failure-injection counters are per process, shared by all instances, keyed by (task_id, round_index).
    _transient_calls: dict[tuple[str, int], int] = {}
    _transient_lock = threading.Lock()

    def __init__(self, settings: BackendSettings | None = None):
        super().__init__(settings)
        unknown = set(self.settings) - SETTINGS_KEYS
        if unknown:
            raise PermanentModelError(
                f"unknown simulated setting(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(SETTINGS_KEYS))}"
            )
        fail = self.settings.get("fail")
        if fail not in (None, "permanent"):
            raise PermanentModelError(f'simulated setting "fail" must be "permanent" or absent, got {fail!r}')
        correct_from = self.settings.get("correct_from_round")
        if correct_from is not None and (isinstance(correct_from, bool) or not isinstance(correct_from, int)):
            raise PermanentModelError(
                f'simulated setting "correct_from_round" must be an integer, got {correct_from!r}'
            )
        self.correct_from_round: int | None = correct_from
        self.chunk_delay = float(self.settings.get("chunk_delay", 0.02))
        self.fail_transient_times = int(self.settings.get("fail_transient_times", 0))

    @classmethod
    def reset_failure_counters(cls) -> None:
        with cls._transient_lock:
            cls._transient_calls.clear()

    def _chunks(self, request: ModelRequest, stream: Stream) -> Iterator[str]:
        context = request.context
        self._inject_failures(context)
        text = self.answer(request)
        stream.prompt_tokens = sum(count_words(message.text_content) for message in request.messages)
        stream.completion_tokens = count_words(text)
        yield from stream_words(text, self.chunk_delay)

    def _inject_failures(self, context: TaskContext) -> None:
        where = f"task {context.task_id!r} round {context.round_index}"
        if self.settings.get("fail") == "permanent":
            raise PermanentModelError(f"simulated permanent failure (setting fail=permanent) for {where}")
        if self.fail_transient_times > 0:
            key = (context.task_id, context.round_index)
            with self._transient_lock:
                calls = self._transient_calls.get(key, 0)
                self._transient_calls[key] = calls + 1
            if calls < self.fail_transient_times:
                raise TransientModelError(
                    f"simulated transient failure {calls + 1} of {self.fail_transient_times} for {where}"
                )

    def answer(self, request: ModelRequest) -> str:
        """The full answer text: one reasoning sentence, then ``Answer: <value>``."""
        context = request.context
        correct = self.is_correct(request)
        value = correct_value(context) if correct else wrong_value(context)
        reasons: tuple[str, ...]
        if context.round_index == 0:
            reasons = FIRST_TRY_REASONS
        elif correct:
            reasons = CORRECTED_REASONS
        else:
            reasons = STILL_WRONG_REASONS
        seed = _seed(context)
        ground_truth = context.ground_truth.strip().lower()
        # A wrong answer must not leak the ground truth anywhere when it can be avoided.
        rotated = reasons[seed % len(reasons) :] + reasons[: seed % len(reasons)]
        for reason in rotated + FALLBACK_REASONS:
            if correct or len(ground_truth) < 2 or ground_truth not in reason.lower():
                return f"{reason}\nAnswer: {value}"
        return f"Answer: {value}"

    def is_correct(self, request: ModelRequest) -> bool:
        context = request.context
        if context.round_index < 1 or not context.ground_truth.strip():
            return False
        if self.correct_from_round is not None and context.round_index >= self.correct_from_round:
            return True
        user_messages = [message for message in request.messages if message.role == "user"]
        return bool(user_messages) and was_told(context, user_messages[-1].text_content)


def _seed(context: TaskContext) -> int:
    digest = hashlib.sha256(f"{context.task_id}\x00{context.round_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _contains_word(text: str, word: str, *, ignore_case: bool = True) -> bool:
    if not word:
        return False
    pattern = rf"(?<!\w){re.escape(word)}(?!\w)"
    return re.search(pattern, text, re.IGNORECASE if ignore_case else 0) is not None


def _option_texts(context: TaskContext) -> list[str]:
    """Option texts without any "A." / "(b)" label in front."""
    return [_OPTION_LABEL.sub("", option).strip() for option in context.options]


def _letters(context: TaskContext) -> list[str]:
    count = len(context.options) if len(context.options) >= 2 else 4  # no options given: assume A-D
    return [chr(ord("A") + i) for i in range(count)]


def choice_index(context: TaskContext) -> int | None:
    """Index of the correct option: the ground truth is a letter ("B", "(b)") or an option's text."""
    ground_truth = context.ground_truth.strip()
    match = _LETTER_GT.match(ground_truth)
    if match:
        index = ord(match.group(1).upper()) - ord("A")
        return index if index < len(_letters(context)) else None
    for index, text in enumerate(_option_texts(context)):
        if text and text.lower() == ground_truth.lower():
            return index
    return None


def correct_value(context: TaskContext) -> str:
    if context.answer_type == "choice":
        index = choice_index(context)
        if index is not None:
            return _letters(context)[index]
    return context.ground_truth.strip()


def was_told(context: TaskContext, text: str) -> bool:
    """Does the feedback text give the ground truth away?"""
    ground_truth = context.ground_truth.strip()
    if context.answer_type == "choice":
        index = choice_index(context)
        if index is not None:
            letter = _letters(context)[index]
            # A bare capital letter, or a lowercase one in an explicit phrase: the article "a" is not a hint.
            if _contains_word(text, letter, ignore_case=False):
                return True
            phrase = rf"(?:\(\s*{letter}\s*\)|\b(?:option|answer is|answer:|choice)\s*\(?{letter}\b)"
            if re.search(phrase, text, re.IGNORECASE):
                return True
            option_texts = _option_texts(context)
            if index < len(option_texts) and _contains_word(text, option_texts[index]):
                return True
        return len(ground_truth) > 1 and _contains_word(text, ground_truth)
    if context.answer_type == "number":
        target = _as_number(ground_truth)
        if target is not None and any(float(found) == target for found in _NUMBER.findall(text)):
            return True
    return _contains_word(text, ground_truth)


def _as_number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def wrong_value(context: TaskContext) -> str:
    """A deterministic wrong answer that never contains the ground truth (case-insensitive)."""
    seed = _seed(context)
    ground_truth = context.ground_truth.strip().lower()

    def acceptable(candidate: str) -> bool:
        return not ground_truth or ground_truth not in candidate.lower()

    if context.answer_type == "choice":
        letters = _letters(context)
        index = choice_index(context)
        others = [letter for i, letter in enumerate(letters) if i != index and acceptable(letter)]
        if others:
            return others[seed % len(others)]
    if context.answer_type == "number":
        target = _as_number(ground_truth)
        if target is not None:
            for candidate in _wrong_numbers(target, ground_truth, seed):
                if acceptable(candidate):
                    return candidate
    candidates = WRONG_PHRASES[seed % len(WRONG_PHRASES) :] + WRONG_PHRASES[: seed % len(WRONG_PHRASES)]
    for candidate in candidates:
        if acceptable(candidate):
            return candidate
    # Only a pathological ground truth (like "e") gets here: answer with characters it does not use.
    return next(ch for ch in "xzq0123456789" if acceptable(ch))


def _wrong_numbers(target: float, ground_truth: str, seed: int) -> Iterator[str]:
    decimals = len(ground_truth.split(".", 1)[1]) if "." in ground_truth else 0
    # Near misses first (off by 1-5, in an order picked by the seed), then anything further away.
    near = list(range(1, 6))
    start = seed % len(near)
    for step in near[start:] + near[:start] + list(range(6, 40)):
        for sign in (1, -1) if seed % 2 else (-1, 1):
            value = target + sign * step * (10**-decimals if decimals else 1)
            if value < 0 <= target:
                continue  # a count of objects does not become negative
            text = f"{value:.{decimals}f}"
            if float(text) != target:
                yield text
