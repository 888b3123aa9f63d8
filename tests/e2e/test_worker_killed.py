"""A worker killed during a generation: the round is not dropped; it completes once a new worker starts."""

import time

import pytest

from annotate.models import Round, Session
from annotate.queue.services import assignment_next
from tests import stack
from tests.factories import ModelConfigFactory, make_batch

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

QUEUE = "model.kill-test"  # only this test's workers consume it


def test_round_survives_a_killed_worker(annotator, redis_url, stack_logs):
    model = ModelConfigFactory(queue=QUEUE, backend_settings={"chunk_delay": 0.25})
    batch = make_batch(models=[model])
    env = {"CELERY_VISIBILITY_TIMEOUT": "3"}  # redeliver unacknowledged work quickly in this test
    first_log = stack_logs / "killed-worker.log"
    first = stack.start_worker(first_log, name="doomed", concurrency=1, queues=QUEUE, **env)
    try:
        stack.wait_worker_ready(first_log)
        session = assignment_next(annotator=annotator, batch=batch).session
        rnd = session.rounds.get()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            rnd.refresh_from_db()
            if rnd.generation_status == Round.Generation.RUNNING and rnd.answer_text:
                break
            time.sleep(0.05)
        assert rnd.answer_text, "the first worker never started streaming"
    finally:
        stack.kill_hard(first)
    rnd.refresh_from_db()
    assert rnd.generation_status == Round.Generation.RUNNING  # mid-generation when killed
    # Redis hands an unacknowledged message to a worker once it is older than the visibility timeout; a worker
    # restores such messages when it starts, so start the new one after that much time.
    time.sleep(float(env["CELERY_VISIBILITY_TIMEOUT"]) + 1)

    second_log = stack_logs / "rescue-worker.log"
    second = stack.start_worker(second_log, name="rescuer", concurrency=1, queues=QUEUE, **env)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            session.refresh_from_db()
            if session.status == Session.Status.AWAITING_FEEDBACK:
                break
            time.sleep(0.2)
        rnd.refresh_from_db()
        assert session.status == Session.Status.AWAITING_FEEDBACK, second_log.read_text()[-2000:]
        assert rnd.generation_status == Round.Generation.DONE and rnd.attempts >= 2
        assert rnd.answer_text.strip().splitlines()[-1].startswith("Answer:")
        assert session.rounds.count() == 1
    finally:
        stack.stop(second)
