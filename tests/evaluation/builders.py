"""Build completed InterFeedback sessions straight from outcome counts (no engine, no broker)."""

from __future__ import annotations

import datetime as dt
import itertools

from annotate.models import Round, Session, Task
from evaluation.interfeedback import services as outcome_services
from tests.factories import TaskFactory, make_batch

NEVER = None


def sessions_from_counts(batch, model, category: str, corrected: tuple[int, int, int, int], sessions: int, *,
                         annotators=(None,), completed_at: dt.datetime | None = None, with_rounds: bool = False):
    """`sessions` completed sessions of one (model, category): corrected[k] first corrected in round k, the rest
    never. Annotators take turns; one task per (batch, category) is shared by all its sessions."""
    assert sum(corrected) <= sessions
    task = Task.objects.filter(batch=batch, category=category).first() or TaskFactory(batch=batch, category=category)
    outcomes = [k for k, n in enumerate(corrected) for _ in range(n)] + [NEVER] * (sessions - sum(corrected))
    when = completed_at or dt.datetime(2025, 3, 1, 12, tzinfo=dt.UTC)
    turns = itertools.cycle(annotators)
    created = Session.objects.bulk_create([
        Session(batch=batch, task=task, model_config=model, annotator=next(turns), status=Session.Status.COMPLETED,
                corrected_round=outcome, completed_at=when)
        for outcome in outcomes
    ])
    if with_rounds:
        Round.objects.bulk_create([
            Round(session=session, index=index, feedback_text="" if index == 0 else f"Feedback {index}",
                  feedback_kind="" if index == 0 else ("ground_truth" if index == 3 else "human"),
                  answer_text=f"Answer: {index}", extracted_answer=str(index),
                  final_verdict=session.corrected_round == index, generation_status=Round.Generation.DONE,
                  latency_ms=100 + index)
            for session in created
            for index in range(4 if session.corrected_round is None else session.corrected_round + 1)
        ])
    return created


def counted_batch(model, *, annotator, members=()):
    """A batch of ``model`` whose report has one counted cell: 80 sessions of Visual Logic by ``annotator``, 17
    right at round 0 and 9, 5, 3 first corrected in rounds 1-3 (accuracy 21.3), its counters recomputed."""
    batch = make_batch(models=[model], tasks=0, members=list(members))
    sessions_from_counts(batch, model, "Visual Logic", (17, 9, 5, 3), 80, annotators=(annotator,))
    outcome_services.outcome_recompute(batch_id=batch.id)
    return batch
