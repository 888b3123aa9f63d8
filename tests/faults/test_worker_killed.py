"""A worker SIGKILLed mid-stream: the round is failed with Retry within seconds (not after Redis' 15-minute
visibility timeout), Retry runs it once on another worker, and nothing the annotator typed is lost."""

import time
import uuid

import pytest

from annotate.models import Round, Session
from annotate.queue.services import assignment_next
from annotate.sessions import stalls
from tests import stack
from tests.factories import ModelConfigFactory, make_batch

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

QUEUE = "model.stall-test"  # only this test's workers consume it


def _wait(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_killed_workers_round_can_be_retried_at_once(annotator, redis_url, stack_logs, settings, api_client):
    settings.STALLED_ROUND_GRACE_SECONDS = 4
    model = ModelConfigFactory(queue=QUEUE, backend_settings={"chunk_delay": 0.25, "correct_from_round": 5})
    batch = make_batch(models=[model])
    env = {"ROUND_HEARTBEAT_SECONDS": "1"}
    first_log = stack_logs / "stall-doomed.log"
    first = stack.start_worker(first_log, name="stall-doomed", concurrency=1, queues=QUEUE, **env)
    try:
        stack.wait_worker_ready(first_log)
        session = assignment_next(annotator=annotator, batch=batch).session
        api_client.force_authenticate(annotator)
        _wait(lambda: Round.objects.filter(session=session, generation_status=Round.Generation.RUNNING)
              .exclude(answer_text="").exists(), 60, "round 0 to stream")
    finally:
        stack.kill_hard(first)
    killed_at = time.monotonic()
    draft = "Look at the second row again"
    assert api_client.post(f"/api/sessions/{session.id}/draft/", {"draft": draft}, format="json").status_code == 204

    # The page polls the session while the model answers; once the heartbeat is stale it shows Retry.
    body = _wait(lambda: (lambda b: b if b["status"] == Session.Status.FAILED else None)(
        api_client.get(f"/api/sessions/{session.id}/").json()), 60, "the stalled round to fail")
    print(f"\nkill -> Retry offered: {time.monotonic() - killed_at:.1f} s")
    assert body["rounds"][0]["error"] == stalls.WORKER_STOPPED_MESSAGE

    second_log = stack_logs / "stall-rescuer.log"
    second = stack.start_worker(second_log, name="stall-rescuer", concurrency=1, queues=QUEUE, **env)
    try:
        stack.wait_worker_ready(second_log)
        assert api_client.post(f"/api/sessions/{session.id}/retry/").status_code in (200, 202)
        _wait(lambda: Session.objects.filter(pk=session.pk, status=Session.Status.AWAITING_FEEDBACK).exists(),
              60, f"the retried round to finish; worker log:\n{second_log.read_text()[-2000:]}")
    finally:
        stack.stop(second)
    rnd = session.rounds.get()  # one round: nothing doubled
    assert rnd.generation_status == Round.Generation.DONE and rnd.attempts == 2
    assert rnd.answer_text.strip().splitlines()[-1].startswith("Answer:")
    session.refresh_from_db()
    assert session.feedback_draft == draft  # what was typed during the outage is kept
    feedback = api_client.post(f"/api/sessions/{session.id}/feedback/",
                               {"feedback": "Count the shapes in each row.", "client_request_id": str(uuid.uuid4())},
                               format="json")
    assert feedback.status_code == 201, feedback.json()  # the annotator goes on
