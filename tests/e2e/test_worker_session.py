"""End to end: a real Celery worker process and a real Redis run a whole session."""

import uuid

import pytest

from annotate.models import Round, Session
from annotate.queue.services import assignment_next
from annotate.sessions.services import round_submit_feedback
from tests.factories import ModelConfigFactory, attach_image, make_batch
from tests.stack import session_wait, wait_counted

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_worker_runs_a_session_through_round_three(annotator, celery_worker_process):
    model = ModelConfigFactory(backend_settings={"chunk_delay": 0.005})
    batch = make_batch(models=[model])
    attach_image(batch.tasks.get())
    session = assignment_next(annotator=annotator, batch=batch).session
    session_wait(session, lambda s: s.status == Session.Status.AWAITING_FEEDBACK)
    for attempt in ("first", "second", "third"):  # no digits: on a number task they would be stated answers
        round_submit_feedback(session_id=session.id, feedback=f"Not right, look again ({attempt} try).",
                              client_request_id=str(uuid.uuid4()))
        session_wait(session, lambda s: s.status != Session.Status.GENERATING)
    assert session.status == Session.Status.COMPLETED and session.corrected_round == 3
    rounds = list(session.rounds.order_by("index"))
    assert [r.generation_status for r in rounds] == [Round.Generation.DONE] * 4
    assert all(r.latency_ms is not None and r.answer_text.strip().splitlines()[-1].startswith("Answer:") for r in rounds)
    wait_counted(session)


def test_transient_errors_are_retried_by_the_backend_not_by_celery(annotator, celery_worker_process):
    model = ModelConfigFactory(backend_settings={"chunk_delay": 0, "fail_transient_times": 1})
    batch = make_batch(models=[model])
    session = assignment_next(annotator=annotator, batch=batch).session
    session_wait(session, lambda s: s.status == Session.Status.AWAITING_FEEDBACK)
    # One claim: the backend's RetryPolicy made the second call inside the task; Celery did not run it again.
    assert session.rounds.get().attempts == 1
