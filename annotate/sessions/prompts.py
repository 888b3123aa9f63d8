"""Default receiver prompts (a batch may set its own). Pure: a task and its rounds so far as chat messages."""

from __future__ import annotations

from dataclasses import dataclass

from annotate.sessions.verification import option_letters

DEFAULT_TEMPLATES = {
    "receiver_round0": "{question}\n{options}\nThink briefly, then end your reply with a line 'Answer: {answer_format}'.",
    "receiver_retry": "{feedback}\nPlease answer the question again.",
    "ground_truth_suffix": "The correct answer is {ground_truth}.",
    "simple_feedback": "Your answer is incorrect.",
}

_ANSWER_FORMATS = {"choice": "<letter>", "number": "<number>", "text": "<text>", "manual": "<answer>"}


@dataclass(frozen=True)
class RoundTurn:
    feedback_to_model: str  # empty for round 0
    answer_text: str  # empty for the round being generated


def templates_for(batch_templates: dict | None) -> dict:
    merged = dict(DEFAULT_TEMPLATES)
    merged.update({k: v for k, v in (batch_templates or {}).items() if k in DEFAULT_TEMPLATES and v})
    return merged


def format_options(options) -> str:
    return "\n".join(f"{letter}. {text}" for letter, text in zip(option_letters(options), options, strict=True))


def round0_text(*, question: str, options, answer_type: str, templates: dict) -> str:
    return templates["receiver_round0"].format(
        question=question.strip(),
        options=format_options(options) if options else "",
        answer_format=_ANSWER_FORMATS.get(answer_type, "<answer>"),
    ).replace("\n\n", "\n")


def retry_text(feedback_to_model: str, templates: dict) -> str:
    return templates["receiver_retry"].format(feedback=feedback_to_model.strip())


def feedback_for_model(*, typed: str, round_index: int, max_rounds: int, ground_truth: str, templates: dict) -> str:
    """Round max_rounds (3) hands the ground truth to the model: appended to what the annotator typed."""
    if round_index < max_rounds:
        return typed.strip()
    suffix = templates["ground_truth_suffix"].format(ground_truth=ground_truth)
    return f"{typed.strip()} {suffix}".strip()


def conversation(*, round0: str, rounds: list[RoundTurn], templates: dict) -> list[tuple[str, str]]:
    """(role, text) turns for the round being generated (the last of ``rounds``).

    Round 0's user turn is the question; round k's is the feedback plus "Please answer the question again."
    Images belong to the first user turn; the caller attaches them.
    """
    turns: list[tuple[str, str]] = []
    for index, turn in enumerate(rounds):
        turns.append(("user", round0 if index == 0 else retry_text(turn.feedback_to_model, templates)))
        if index < len(rounds) - 1:
            turns.append(("assistant", turn.answer_text))
    return turns
