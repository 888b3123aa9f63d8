"""A FIRE teacher's "Score: N / Feedback: ..." output, read as FIRE's official code reads it (MM-FIRE/FIRE,
``llava/eval/feedback_chat.py``), never more leniently, so a teacher's format slips cost it what they cost in the
paper's tables.

``get_score``: "only the teacher output's first line is read; it must contain ``Score:`` exactly as written; the
score is the first whole number on it" (``text.splitlines()[0]``, ``assert "Score:" in ...``,
``re.findall(r'\\d+', ...)[0]``): "Score: 7.5" gives 7, "Score: 12" gives 12, "score: 7" and a score on the second
line give nothing. ``get_feedback``: the text after the first "Feedback:" anywhere, stripped; nothing without it.

How each evaluation uses them (the same code paths as the official scripts):
- fixed dialogues (``eval_feedback_teacher``): both are read in one ``try``; on any failure the score is -1 and the
  feedback "" (``fixed_dialogue_reading``). The recorded reference turns are read the same way.
- free dialogues (``model_fire_chat_loader.py``): the score alone (an unparsed one is set to 0 there and ends the
  dialogue); the student is shown ``get_feedback``'s text, or the whole teacher output when it fails
  (``feedback_for_student``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SCORE_MARKER = "Score:"
FEEDBACK_MARKER = "Feedback:"
# The official code marks a score it cannot read -1 (fixed dialogues); the app stores None for it.
UNPARSED_SCORE = -1
# Python's \d, as the official code's re.findall (Unicode digits count, as float() reads them).
_WHOLE_NUMBER = re.compile(r"\d+")


def official_score(text: str) -> float | None:
    """FIRE's ``get_score``: the first whole number on the first line, if that line contains "Score:"."""
    lines = (text or "").splitlines()
    if not lines or SCORE_MARKER not in lines[0]:
        return None
    numbers = _WHOLE_NUMBER.findall(lines[0])
    return float(numbers[0]) if numbers else None


def official_feedback(text: str) -> str | None:
    """FIRE's ``get_feedback``: what follows the first "Feedback:", stripped; None without the marker."""
    start = (text or "").find(FEEDBACK_MARKER)
    return None if start == -1 else text[start + len(FEEDBACK_MARKER):].strip()


@dataclass(frozen=True)
class TeacherReading:
    score: float | None  # None where the official code records -1
    feedback: str  # "" where it fails


def fixed_dialogue_reading(text: str) -> TeacherReading:
    """``eval_feedback_teacher``: score and feedback together, or -1 (None) and "" if either cannot be read."""
    score, feedback = official_score(text), official_feedback(text)
    if score is None or feedback is None:
        return TeacherReading(None, "")
    return TeacherReading(score, feedback)


def feedback_for_student(text: str) -> str:
    """What the student is told in a dialogue (``get_student_inputs``): the feedback, else the whole output."""
    feedback = official_feedback(text)
    return text or "" if feedback is None else feedback
