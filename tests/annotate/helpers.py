"""Drive sessions through the services as the worker would, without a broker (tasks called directly)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from django.db import connection, connections

from annotate.assignments import assignment_complete
from annotate.models import Assignment, Round, Session
from annotate.sessions import generation
from annotate.sessions.services import round_submit_feedback


def run_pending_round(session: Session) -> Round:
    """Generate the session's queued round in-process, exactly as the Celery task would."""
    rnd = session.rounds.order_by("-index").first()
    generation.round_generate(round_id=rnd.id, claim_token=f"test-{uuid.uuid4()}")
    session.refresh_from_db()
    rnd.refresh_from_db()
    return rnd


def send_feedback(session: Session, text: str = "Count again, more carefully.", **kwargs) -> Round:
    round_submit_feedback(session_id=session.id, feedback=text, client_request_id=str(uuid.uuid4()), **kwargs)
    return run_pending_round(session)


def finish(assignment: Assignment) -> None:
    """Mark the assignment's session done and complete the assignment, as the engine would at the end."""
    Session.objects.filter(assignment=assignment).update(status=Session.Status.COMPLETED)
    assignment_complete(assignment_id=assignment.id)


def field_values(instance) -> dict:
    """Every concrete field's value of a model instance, by attribute name."""
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def run_isolated(coroutine_function):
    """Run a coroutine in a thread of its own: the Playwright tests keep an event loop running in the main
    thread for the whole session, and asyncio.run / async_to_sync refuse to run beside it."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine_function()).result()


def all_at_once(work, args: list, timeout: float = 120) -> list:
    """Call ``work(arg)`` for each of ``args`` in a thread of its own, all released together (a real race on the
    database). Returns each call's result, or the exception it raised, in order; each thread closes its database
    connection."""
    results: list = [None] * len(args)
    gate = threading.Barrier(len(args))

    def run(index: int) -> None:
        try:
            gate.wait()
            results[index] = work(args[index])
        except BaseException as error:  # handed to the test thread in place of the result
            results[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(args))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert not any(thread.is_alive() for thread in threads)
    return results


def blocked_backends_seen(count: int, timeout: float = 15) -> bool:
    """Whether ``count`` other backends of the test database are seen waiting on a lock within ``timeout`` seconds
    (PostgreSQL; read in the calling thread's connection, afresh each time even inside a transaction)."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'")
            if cursor.fetchone()[0] >= count:
                return True
            time.sleep(0.02)
    return False
