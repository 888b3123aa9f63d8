"""Sessions as export records (docs/reference/): one JSON line per session, or a FIRE conversation.

Plain functions over a session object with its task, model, annotator and rounds already loaded (the
selector prefetches them) and its ``follows_reveal`` and ``sequence_position`` annotations; no queries here. Annotators appear only by pseudonym.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from annotate.sessions.selectors import task_fields

# FIRE's teachers score each student response 1-10 and call >= 8 right. Human sessions have a verdict instead;
# it is exported as 10 (right) or 1 (wrong) so FIRE's threshold reads it correctly, with the verdicts beside.
FIRE_SCORE_RIGHT, FIRE_SCORE_WRONG = 10, 1
SESSION_FORMATS = ("jsonl", "fire")  # session records, or FIRE conversations


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def _images(session) -> list[str]:
    return [f"images/{ti.blob.sha256}" for ti in session.task.task_images.all()]


def round_record(rnd) -> dict:
    return {
        "index": rnd.index,
        "feedback_kind": rnd.feedback_kind or None,
        "feedback_text": rnd.feedback_text,
        "feedback_to_model": rnd.feedback_to_model,
        "leak_flagged": rnd.leak_flagged,  # sent despite the "states an answer" warning
        "stated_answer": rnd.stated_answer,  # what the warning detected in the typed text
        "stated_answer_correct": rnd.stated_answer_correct,  # never shown to the annotator; null: not checked
        "answer_text": rnd.answer_text,
        "extracted_answer": rnd.extracted_answer,
        "auto_verdict": rnd.auto_verdict,
        "final_verdict": rnd.final_verdict,
        "verdict_source": rnd.verdict_source or None,
        "generation_status": rnd.generation_status,
        "typing_ms": rnd.typing_ms,
        "first_token_ms": rnd.first_token_ms,
        "latency_ms": rnd.latency_ms,
        "prompt_tokens": rnd.prompt_tokens,
        "completion_tokens": rnd.completion_tokens,
        "created_at": _iso(rnd.created_at),
        "started_at": _iso(rnd.started_at),
        "finished_at": _iso(rnd.finished_at),
    }


def session_record(session) -> dict:
    task = session.task
    return {
        "session_id": session.id,
        "batch_id": session.batch_id,
        # The researchers' own id and whether it was an attention check: the annotator's page shows neither.
        "task": {"id": task.external_id, **task_fields(task), "ground_truth": task.ground_truth,
                 "images": _images(session), "attention_check": task.is_gold},
        "model": session.model_config.name,
        "annotator": session.annotator.pseudonym if session.annotator_id else None,
        "status": session.status,
        "corrected_round": session.corrected_round,
        "started_at": _iso(session.started_at),
        "completed_at": _iso(session.completed_at),
        "follows_reveal": session.follows_reveal,
        # 1: the first item served to this annotator in the batch (None: a session served before positions were kept)
        "sequence_position": session.sequence_position or None,
        "rounds": [round_record(rnd) for rnd in session.rounds.all()],
    }


def _question_text(task) -> str:
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    options = [f"{letters[i]}. {option}" for i, option in enumerate(task.options or []) if i < len(letters)]
    return "\n".join([task.question, *options])


def fire_record(session) -> dict:
    """The session as a FIRE conversation: the model is the student, the human the teacher."""
    conversations: list[dict] = []
    verdicts: list[bool | None] = []
    for rnd in session.rounds.all():
        if rnd.index > 0:
            # What the model was told (round 3 adds the ground truth), which is what training should see.
            feedback = rnd.feedback_to_model or rnd.feedback_text
            conversations.append({"role": "teacher", "type": "feedback", "value": feedback})
        conversations.append({"role": "student", "type": "response", "value": rnd.answer_text})
        verdicts.append(rnd.final_verdict)
    images = _images(session)
    return {
        "id": f"feedback-lab-{session.batch_id}-{session.id}",
        "image": images[0] if images else None,
        "question": {"value": _question_text(session.task)},
        "groundtruth": {"value": session.task.ground_truth},
        "conversations": conversations,
        "source": session.task.source or "feedback-lab",
        "round": sum(1 for turn in conversations if turn["role"] == "teacher"),
        "score": [FIRE_SCORE_RIGHT if verdict else FIRE_SCORE_WRONG for verdict in verdicts],
        "split": "human",
        "verdicts": verdicts,
        "model": session.model_config.name,
        "annotator": session.annotator.pseudonym if session.annotator_id else None,
        "category": session.task.category,
        "follows_reveal": session.follows_reveal,
        "sequence_position": session.sequence_position or None,
    }


def jsonl_lines(sessions: Iterable, fmt: str) -> Iterator[str]:
    """`fmt` "jsonl" (session records) or "fire" (FIRE conversations); one line per session."""
    build = {"jsonl": session_record, "fire": fire_record}[fmt]
    for session in sessions:
        yield json.dumps(build(session), ensure_ascii=False) + "\n"
