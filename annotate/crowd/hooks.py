"""What a completed session means for an invited participant: after an attention check (a gold session), a
participation with as many failures as its study allows ends (annotate.crowd.ending). Registered on
annotate.sessions.completion when the app loads."""

from __future__ import annotations

from annotate.crowd.ending import participation_check
from annotate.crowd.study import study_of
from annotate.models import Participation, Session
from annotate.sessions.completion import on_session_completed


@on_session_completed
def attention_after_gold_session(session_id: int, *, in_worker: bool) -> None:
    """A few queries, and only for a gold session of a participant whose study ends participations on failures."""
    row = Session.objects.filter(pk=session_id, task__is_gold=True, annotator__crowd_batch__isnull=False).values_list(
        "annotator_id", "batch_id").first()
    if row is None:
        return
    participation = Participation.objects.select_related("batch", "user").filter(user_id=row[0],
                                                                                 batch_id=row[1]).first()
    if participation is None:
        return
    study = study_of(participation.batch)
    if study.max_attention_failures:
        participation_check(participation, study)
