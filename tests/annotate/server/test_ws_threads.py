"""Each WebSocket's database calls run in a thread of that socket (annotate.server.ws_threads): one socket waiting
on the database holds up no other, and the waiting one's draft is saved once the row is free."""

import asyncio
import threading

import pytest
from channels.testing import WebsocketCommunicator
from django.db import connection, connections, transaction
from django.test import Client

from annotate.config.asgi import application
from annotate.models import Session
from annotate.queue.services import assignment_next
from tests.annotate.helpers import run_isolated
from tests.factories import make_batch

pytestmark = pytest.mark.django_db(transaction=True)


def cookie_of(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def socket(session_id: int, cookie: str) -> WebsocketCommunicator:
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", f"sessionid={cookie}".encode())]
    return WebsocketCommunicator(application, f"/ws/sessions/{session_id}/", headers=headers)


class RowLock:
    """Holds the lock on a session's row from a connection of its own (as a long write elsewhere would)."""

    def __init__(self, session_id: int):
        self.session_id, self.taken, self.release = session_id, threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self.hold)

    def hold(self) -> None:
        try:
            with transaction.atomic():
                list(Session.objects.select_for_update().filter(pk=self.session_id))
                self.taken.set()
                self.release.wait(30)
        finally:
            connections.close_all()

    def __enter__(self):
        self.thread.start()
        assert self.taken.wait(10)
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.thread.join(10)


def test_a_socket_waiting_on_a_locked_row_holds_up_no_other_socket(annotator, outsider, simulated_model,
                                                                    no_dispatch):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has no row locks to wait on")
    batch = make_batch(models=[simulated_model], tasks=2)
    waiting = assignment_next(annotator=annotator, batch=batch).session
    other = assignment_next(annotator=outsider, batch=batch).session
    cookies = cookie_of(annotator), cookie_of(outsider)

    async def scenario(lock: RowLock):
        first, second = socket(waiting.id, cookies[0]), socket(other.id, cookies[1])
        for comm in (first, second):
            assert (await comm.connect(timeout=10))[0]
            assert (await comm.receive_json_from(timeout=5))["type"] == "snapshot"
        await first.send_json_to({"type": "draft", "draft": "Count the ones at the back", "id": 1})
        await asyncio.sleep(0.3)  # the first socket's UPDATE now waits for the row lock
        await second.send_json_to({"type": "draft", "draft": "Look at the legend", "id": 1})
        second_reply = await second.receive_json_from(timeout=5)  # not behind the first socket's wait
        first_still_waiting = await first.receive_nothing(timeout=0.2)
        await asyncio.to_thread(lock.__exit__)
        first_reply = await first.receive_json_from(timeout=10)
        for comm in (first, second):
            await comm.disconnect()
        return first_still_waiting, second_reply, first_reply

    with RowLock(waiting.id) as lock:
        first_still_waiting, second_reply, first_reply = run_isolated(lambda: scenario(lock))
    assert second_reply == {"type": "draft_saved", "id": 1}
    assert first_still_waiting
    assert first_reply == {"type": "draft_saved", "id": 1}
    waiting.refresh_from_db()
    other.refresh_from_db()
    assert (waiting.feedback_draft, other.feedback_draft) == ("Count the ones at the back", "Look at the legend")
