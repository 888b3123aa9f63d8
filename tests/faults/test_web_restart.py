"""The web server killed (SIGKILL) mid-session and started again on the same port: the page's state comes back from
the database (the API and the WebSocket snapshot), the draft typed before the kill is there, and a submit, whether
sent before the kill or after the restart, and however often it is sent again, makes exactly one round."""

from __future__ import annotations

import json
import socket
import time
import uuid

import httpx
import pytest

from annotate.models import Session
from tests import stack
from tests.annotate.helpers import run_isolated
from tests.factories import ModelConfigFactory, make_batch

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DRAFT = "Count the apples in the back row as well."


@pytest.fixture(autouse=True)
def _worker_settles_before_flush(transactional_db):
    """Torn down before the database flush: the worker finishes this test's rounds first (no deadlock)."""
    yield
    stack.wait_worker_settled()


class WebServer:
    """daphne on a fixed port, which the test kills and starts again."""

    def __init__(self, log):
        self.log, self.port = log, stack.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = stack.start_web(log, self.port)

    def kill_and_restart(self) -> None:
        self.process.kill()  # SIGKILL: no shutdown, connections cut
        self.process.wait()
        self.process = stack.start_web(self.log, self.port)

    def stop(self) -> None:
        stack.stop(self.process)


@pytest.fixture
def web(stack_logs, redis_url, celery_worker_process):
    server = WebServer(stack_logs / "web-restart.log")
    yield server
    server.stop()


def wait_status(client: httpx.Client, url: str, *wanted: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        snapshot = client.get(url).json()
        if snapshot["status"] in wanted:
            return snapshot
        time.sleep(0.1)
    raise AssertionError(f"the session stayed {snapshot['status']} (wanted {wanted})")


def feedback_rounds(reply: httpx.Response) -> list[tuple[int, str]]:
    """(index, feedback) of each round in a submit's reply (the worker may already be answering the last)."""
    return [(r["index"], r["feedback_text"]) for r in reply.json()["rounds"]]


def socket_exchange(web: WebServer, session_id: int, cookie: str, draft: str | None = None) -> dict:
    """Connect to the session's WebSocket as the page does; save ``draft`` over it if given. Returns the snapshot
    sent on connect."""
    import aiohttp

    async def exchange():
        async with aiohttp.ClientSession() as client, client.ws_connect(
            f"ws://127.0.0.1:{web.port}/ws/sessions/{session_id}/", origin=web.url,
            headers={"Cookie": f"sessionid={cookie}"},
        ) as ws:
            first = await ws.receive_json(timeout=30)
            if draft is not None:
                await ws.send_json({"type": "draft", "draft": draft, "id": 1})
                while (event := await ws.receive_json(timeout=30))["type"] != "draft_saved":
                    assert event["type"] != "draft_error", event
            return first

    return run_isolated(exchange)  # not asyncio.run: the browser tests keep a loop running in this thread


def start_session(web: WebServer, client: httpx.Client, batch) -> tuple[int, str]:
    response = client.post(f"{web.url}/api/next/", json={"batch": batch.name})
    assert response.status_code == 200, response.text
    session_id = response.json()["session_id"]
    url = f"{web.url}/api/sessions/{session_id}/"
    wait_status(client, url, "awaiting_feedback")  # the worker answered round 0
    return session_id, url


def test_state_and_draft_come_back_after_a_killed_web_server(web, annotator):
    batch = make_batch(models=[ModelConfigFactory()])
    cookie = stack.login_cookie(annotator)
    with httpx.Client(headers=stack.api_token(annotator), timeout=30) as client:
        session_id, url = start_session(web, client, batch)
        before = client.get(url).json()
        socket_exchange(web, session_id, cookie, draft=DRAFT)  # the page autosaves over its socket

        web.kill_and_restart()

        after = client.get(url).json()  # the page's reload
        assert after["feedback_draft"] == DRAFT
        assert {**after, "feedback_draft": ""} == {**before, "feedback_draft": ""}
        snapshot = socket_exchange(web, session_id, cookie)
        assert snapshot["type"] == "snapshot" and snapshot["session"] == after

        request_id = uuid.uuid4().hex
        payload = {"feedback": DRAFT, "client_request_id": request_id}
        first, again = (client.post(url + "feedback/", json=payload) for _ in range(2))
        assert first.status_code == again.status_code == 201, (first.text, again.text)
        assert feedback_rounds(first) == feedback_rounds(again) == [(0, ""), (1, DRAFT)]
    session = Session.objects.get(pk=session_id)
    assert list(session.rounds.order_by("index").values_list("index", "client_request_id", "feedback_text")) == [
        (0, "", ""), (1, request_id, DRAFT)]


def send_without_waiting(web: WebServer, path: str, token_header: dict, payload: dict) -> socket.socket:
    """Write a whole HTTP request to the server and return at once, the reply unread (a browser's request in
    flight at the moment of the kill)."""
    body = json.dumps(payload).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{web.port}\r\nContent-Type: application/json\r\n"
            f"Authorization: {token_header['Authorization']}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n")
    sock = socket.create_connection(("127.0.0.1", web.port))
    sock.sendall(head.encode() + body)
    return sock


@pytest.mark.parametrize("reply_before_kill", [False, True], ids=["killed-in-flight", "killed-after-reply"])
def test_a_submit_sent_before_the_kill_is_saved_once(web, annotator, reply_before_kill):
    batch = make_batch(models=[ModelConfigFactory()])
    headers = stack.api_token(annotator)
    with httpx.Client(headers=headers, timeout=30) as client:
        session_id, url = start_session(web, client, batch)
        payload = {"feedback": DRAFT, "client_request_id": uuid.uuid4().hex}
        sock = send_without_waiting(web, f"/api/sessions/{session_id}/feedback/", headers, payload)
        if reply_before_kill:  # the reply was on its way back when the server died: the page never saw it
            assert b" 201 " in sock.recv(65536).split(b"\r\n", 1)[0]
        web.kill_and_restart()
        sock.close()

        # The page got no answer, so it sends the same submit again, twice (its retry and an impatient click).
        replies = [client.post(url + "feedback/", json=payload) for _ in range(2)]
        assert [r.status_code for r in replies] == [201, 201], [r.text for r in replies]
        assert feedback_rounds(replies[0]) == feedback_rounds(replies[1]) == [(0, ""), (1, DRAFT)]
        done = wait_status(client, url, "awaiting_feedback", "completed")  # the worker answers round 1
    assert len(done["rounds"]) == 2
    session = Session.objects.get(pk=session_id)
    assert session.rounds.filter(client_request_id=payload["client_request_id"]).count() == 1
    assert session.rounds.count() == 2
