"""A model worker's database connection, with a real Celery worker on PostgreSQL: kept from one round to the next
when DB_CONN_MAX_AGE says so (Celery's Django fixup closed it after every task whatever that setting said), and
replaced before use when the server dropped it, so that no round fails for it."""

import time
import uuid

import pytest
from django.db import connection

from annotate.models import Round, Session
from annotate.queue.services import assignment_next
from annotate.sessions.services import round_submit_feedback
from tests import stack
from tests.factories import ModelConfigFactory, make_batch

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql",
                       reason="the worker's connections are read from PostgreSQL's pg_stat_activity"),
]

QUEUE = "model.connection-test"  # only this test's worker consumes it
APP_NAME = "worker-connection-test"  # how PostgreSQL names this worker's connections


def worker_backends() -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", [APP_NAME])
        return {pid for (pid,) in cursor.fetchall()}


def settled(session: Session) -> Session:
    return stack.session_wait(session, lambda s: s.status != Session.Status.GENERATING)


@pytest.fixture
def worker_with(redis_url, stack_logs):
    """Starts this test's worker with the given DB_CONN_MAX_AGE (its connections named APP_NAME); returns its log."""
    started = []

    def start(max_age: str):
        log = stack_logs / f"connection-worker-{max_age}.log"
        url = stack.test_database_url() + f"?application_name={APP_NAME}"
        started.append(stack.start_worker(log, name="connections", concurrency=1, queues=QUEUE, DATABASE_URL=url,
                                          DB_CONN_MAX_AGE=max_age, DB_POOL_MAX_SIZE="0"))
        stack.wait_worker_ready(log)
        return log

    yield start
    for worker in started:
        stack.stop(worker)


def first_round(annotator) -> Session:
    batch = make_batch(models=[ModelConfigFactory(queue=QUEUE, backend_settings={"chunk_delay": 0})])
    return settled(assignment_next(annotator=annotator, batch=batch).session)


def feedback(session: Session) -> Session:
    round_submit_feedback(session_id=session.id, feedback="Not right, look again.", client_request_id=str(uuid.uuid4()))
    return settled(session)


def test_a_worker_keeps_its_connection_between_rounds(annotator, worker_with):
    worker_with("600")
    session = first_round(annotator)
    kept = worker_backends()
    assert len(kept) == 1, f"one connection open between rounds, found {kept}"
    for _ in range(2):
        session = feedback(session)
        assert worker_backends() == kept, "the worker opened a new connection for a round"
    assert session.rounds.count() == 3
    assert all(status == Round.Generation.DONE for status in session.rounds.values_list("generation_status", flat=True))


def test_a_dropped_connection_is_replaced_before_the_next_round(annotator, worker_with):
    log = worker_with("600")
    session = first_round(annotator)
    dropped = worker_backends()
    with connection.cursor() as cursor:  # as a database restart or a failover does to its clients
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                       [APP_NAME])
    session = feedback(session)
    latest = session.rounds.order_by("-index").first()
    assert (session.status, latest.generation_status, latest.attempts) == (
        Session.Status.AWAITING_FEEDBACK, Round.Generation.DONE, 1), log.read_text()[-2000:]
    assert worker_backends().isdisjoint(dropped)


def test_without_a_max_age_each_round_opens_its_own(annotator, worker_with):
    worker_with("0")
    session = feedback(first_round(annotator))
    assert session.status == Session.Status.AWAITING_FEEDBACK
    deadline = time.monotonic() + 10  # the task closes it just after the round's commit
    while worker_backends() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker_backends() == set(), "DB_CONN_MAX_AGE=0: nothing held between rounds"
