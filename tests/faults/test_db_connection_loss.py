"""PostgreSQL connections lost mid-request (a database restart or failover): every request in flight either
succeeds or fails with a 503 in JSON, nothing is half written, a retried submit makes exactly one round, and the
requests after the fault work on fresh connections."""

from __future__ import annotations

import random
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest
from django.db import connection

from annotate.models import Round, Session
from annotate.queue.services import assignment_next
from tests import stack
from tests.annotate.helpers import blocked_backends_seen, run_pending_round
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

QUEUE = "model.faults-db"  # no worker consumes it until a test starts one: rounds wait while the database is hit
OK = {200, 201, 204}


@pytest.fixture(scope="module", params=[0, 4], ids=["connection-per-request", "pooled-connections"])
def web(request, django_db_setup, django_db_blocker, redis_url, stack_logs):
    """A web server of this module's own on the test database, whose connections the tests kill: one opening a
    connection per request, one with Django's connection pool (the production setting for web processes)."""
    with django_db_blocker.unblock():
        if connection.vendor != "postgresql":
            pytest.skip("killing database connections is a PostgreSQL fault (SQLite has no connections to lose)")
    port = stack.free_port()
    server = stack.start_web(stack_logs / f"web-db-loss-{request.param}.log", port,
                             DB_POOL_MAX_SIZE=str(request.param))
    yield f"http://127.0.0.1:{port}"
    stack.stop(server)


@pytest.fixture(autouse=True)
def _private_queue_emptied(redis_url):
    yield
    import redis

    redis.Redis.from_url(redis_url).delete(QUEUE)


def session_awaiting_feedback(username: str, batch=None):
    """An annotator with a session whose round 0 is answered (generated in-process, as the worker would)."""
    annotator = UserFactory(username=username)
    batch = batch or make_batch(models=[ModelConfigFactory(queue=QUEUE)])
    session = assignment_next(annotator=annotator, batch=batch).session
    run_pending_round(session)
    assert session.status == Session.Status.AWAITING_FEEDBACK
    return annotator, batch, session


def assert_ok_or_clear_503(response: httpx.Response) -> None:
    if response.status_code in OK:
        return
    assert response.status_code == 503, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["code"] == "database_unavailable" and "Send it again" in body["detail"]


def test_requests_mid_statement_fail_cleanly_and_a_retry_saves_once(web, stack_logs):
    annotator, batch, session = session_awaiting_feedback("dora")
    headers = stack.api_token(annotator)
    url = f"{web}/api/sessions/{session.id}/"
    with httpx.Client(headers=headers, timeout=30) as client:
        assert client.post(url + "draft/", json={"draft": "You missed"}).status_code == 204
    feedback, request_id = "You missed the apples behind the basket.", uuid.uuid4().hex

    # Hold the session's row lock in a connection of the test's own, so that the submit and the draft save are
    # certainly mid-statement (each waits on an UPDATE of that row) when their connections are killed.
    with psycopg.connect(stack.test_database_url()) as locker, ThreadPoolExecutor(2) as pool:
        locker.execute(f"SELECT id FROM {Session._meta.db_table} WHERE id = %s FOR UPDATE", [session.id])
        with httpx.Client(headers=headers, timeout=30) as client:
            submit = pool.submit(client.post, url + "feedback/",
                                 json={"feedback": feedback, "client_request_id": request_id})
            draft = pool.submit(client.post, url + "draft/", json={"draft": feedback})
            assert blocked_backends_seen(2), "2 requests never reached the locked session row"
            killed = stack.database_backends_terminate(keep_pids={locker.info.backend_pid})
            locker.rollback()
            responses = [submit.result(), draft.result()]
    assert killed >= 2
    for response in responses:
        assert response.status_code == 503, response.text[:300]
        assert_ok_or_clear_503(response)
    # Nothing of either request was written: no round, the session still awaits feedback, the old draft is there.
    session.refresh_from_db()
    assert session.status == Session.Status.AWAITING_FEEDBACK and session.feedback_draft == "You missed"
    assert not session.rounds.filter(client_request_id=request_id).exists()

    # The page sends both again; the connections are new ones.
    with httpx.Client(headers=headers, timeout=30) as client:
        assert client.post(url + "draft/", json={"draft": feedback}).status_code == 204
        assert client.get(url).json()["feedback_draft"] == feedback
        first = client.post(url + "feedback/", json={"feedback": feedback, "client_request_id": request_id})
        again = client.post(url + "feedback/", json={"feedback": feedback, "client_request_id": request_id})
        assert first.status_code == again.status_code == 201, (first.text, again.text)
        assert first.json()["rounds"] == again.json()["rounds"]
        resumed = client.post(f"{web}/api/next/", json={"batch": batch.name})
        assert resumed.status_code == 200 and resumed.json()["session_id"] == session.id
    rnd = session.rounds.get(client_request_id=request_id)
    assert rnd.index == 1 and rnd.feedback_text == feedback and session.rounds.count() == 2

    # The round queued by the retried submit is answered by a real worker.
    log = stack_logs / "worker-db-loss.log"
    worker = stack.start_worker(log, name="db-loss", concurrency=1, queues=QUEUE)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            rnd.refresh_from_db()
            if rnd.generation_status == Round.Generation.DONE:
                break
            time.sleep(0.1)
        assert rnd.generation_status == Round.Generation.DONE, log.read_text()[-2000:]
    finally:
        stack.stop(worker)


def test_connection_storm_loses_no_feedback_and_no_draft(web):
    """Six annotators save drafts, submit and ask for their next item through three failovers (every connection of
    the test database killed every 50 ms for half a second, then a second of calm); each retries what failed, as
    the page does, until the database is back for good and every request goes through."""
    batch = make_batch(models=[ModelConfigFactory(queue=QUEUE)], tasks=6)
    people = [session_awaiting_feedback(f"storm-{i}", batch) for i in range(6)]
    tokens = {annotator.pk: stack.api_token(annotator) for annotator, _, _ in people}
    with connection.cursor() as cursor:  # the test's own connection, which reads the outcome afterwards
        cursor.execute("SELECT pg_backend_pid()")
        keep = {cursor.fetchone()[0]}
    stop_killing = threading.Event()
    killed = 0

    def killer():
        nonlocal killed
        from django.db import connections

        session_ids = [session.id for _, _, session in people]
        try:
            with psycopg.connect(stack.test_database_url()) as locker:
                for _ in range(3):
                    # Each failover begins while some autosave is certainly mid-statement (it waits on a session row
                    # this connection holds): a pool that replaces idle dead connections unseen cannot dodge it.
                    locker.execute(f"SELECT id FROM {Session._meta.db_table} WHERE id = ANY(%s) FOR UPDATE",
                                   [session_ids])
                    assert blocked_backends_seen(1, timeout=5), "no autosave reached the locked session rows"
                    burst_end = time.monotonic() + 0.5
                    while time.monotonic() < burst_end and not stop_killing.is_set():
                        killed += stack.database_backends_terminate(keep_pids=keep | {locker.info.backend_pid})
                        time.sleep(0.05)
                    locker.rollback()
                    stop_killing.wait(1)  # the calm between two failovers, when the pool reconnects
        finally:
            connections.close_all()

    def annotate(person) -> list[httpx.Response]:
        annotator, _, session = person
        url = f"{web}/api/sessions/{session.id}/"
        seen: list[httpx.Response] = []

        def until_ok(method, path, **kwargs) -> httpx.Response:
            give_up = time.monotonic() + 90
            while time.monotonic() < give_up:
                response = client.request(method, path, **kwargs)
                seen.append(response)
                if response.status_code in OK:
                    return response
                assert_ok_or_clear_503(response)
                time.sleep(0.05)
            raise AssertionError(f"{method} {path} never succeeded")

        payload = {"feedback": f"Look again, {annotator.username}.", "client_request_id": f"{session.id}-1"}
        submit_after = random.randint(3, 15)  # somewhere in the storm
        with httpx.Client(headers=tokens[annotator.pk], timeout=30) as client:
            k = 0
            while kill_thread.is_alive() or k < submit_after:  # autosaves for as long as the storm lasts
                k += 1
                if k == submit_after:  # (a submit clears the draft; typing for the next round goes on after it)
                    for _ in range(3):  # the page's retries of an unanswered submit, and a double click
                        until_ok("POST", url + "feedback/", json=payload)
                until_ok("POST", url + "draft/", json={"draft": f"draft {k} of {annotator.username}"})
                time.sleep(0.1)  # typing between autosaves
            assert until_ok("GET", url).json()["feedback_draft"] == f"draft {k} of {annotator.username}"
            assert until_ok("POST", f"{web}/api/next/", json={"batch": batch.name}).json()["session_id"] == session.id
        return k, seen

    kill_thread = threading.Thread(target=killer)
    kill_thread.start()
    try:
        with ThreadPoolExecutor(len(people)) as pool:
            outcomes = list(pool.map(annotate, people))
    finally:
        stop_killing.set()
        kill_thread.join()
    replies = [reply for _, seen in outcomes for reply in seen]
    failed = [r for r in replies if r.status_code not in OK]
    print(f"\n{len(replies)} requests, {len(failed)} refused with 503 while {killed} connections were killed")
    assert killed and failed, "the storm never hit a request: the test proves nothing"
    for (annotator, _, session), (drafts, _) in zip(people, outcomes, strict=True):
        session.refresh_from_db()
        rounds = list(session.rounds.order_by("index").values_list("index", "client_request_id", "feedback_text"))
        assert rounds == [(0, "", ""), (1, f"{session.id}-1", f"Look again, {annotator.username}.")]
        assert session.status == Session.Status.GENERATING
        assert session.feedback_draft == f"draft {drafts} of {annotator.username}"  # the last one acknowledged
    # Afterwards the server works on fresh connections (the pooled ones that were killed are replaced).
    annotator, _, session = people[0]
    with httpx.Client(headers=stack.api_token(annotator), timeout=30) as client:
        assert all(client.get(f"{web}/api/sessions/{session.id}/").status_code == 200 for _ in range(10))
