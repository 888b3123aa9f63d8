"""The feedback provider's prompt (InterFeedback §3.1, Fig. 3). Stored with every run, so a reader can see exactly
what each model was told; the receiver is prompted as in human sessions (annotate.sessions.prompts)."""

from __future__ import annotations

PROVIDER_TEMPLATES = {
    "provider_detail": (
        "You are a teacher helping a student with a multiple-step problem.\n"
        "Problem:\n{question}\n{options}\n"
        "The student's attempts so far:\n{attempts}\n"
        "Your own answer to the problem is: {reference}\n"
        "The student's latest answer is wrong. In a few sentences, explain what is wrong and how to think about it. "
        "Do NOT state the correct answer, an option letter or the final value."
    ),
    "simple_feedback": "Your answer is incorrect.",
}


def attempts_text(history: list[tuple[str, str]]) -> str:
    """(feedback, answer) pairs, round 0 first."""
    lines = []
    for index, (feedback, answer) in enumerate(history):
        if feedback:
            lines.append(f"Feedback {index}: {feedback}")
        lines.append(f"Attempt {index}: {answer.strip()}")
    return "\n".join(lines)
