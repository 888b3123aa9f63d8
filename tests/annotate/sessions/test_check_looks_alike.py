"""An attention check looks like any other item of its batch: the same snapshot keys, the same page elements, the
same WebSocket frames, and nothing that names the check (its id in the researchers' file, "gold", a reference)."""

import json
import re
from html.parser import HTMLParser

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.urls import reverse

from annotate.config.asgi import application
from annotate.models import Batch, Session
from annotate.queue.services import assignment_next, work_items_create_for_batch
from annotate.sessions.selectors import session_snapshot, session_with_task
from tests.annotate.helpers import finish, run_isolated, run_pending_round, send_feedback
from tests.factories import TaskFactory, UserFactory, make_batch

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("no_dispatch")]


def shape(value):
    """The structure of a JSON value: its keys all the way down, each value's type, never the values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


class Elements(HTMLParser):
    """Every element of a page as (tag, its attribute names, its id and class), in order."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "script" and attributes.get("type") == "application/json":
            attributes.pop("id", None)
        self.seen.append((tag, tuple(sorted(attributes)), attributes.get("id"), attributes.get("class")))


def elements(html: str):
    parser = Elements()
    parser.feed(html)
    return parser.seen


def frames(session_id: int, cookie: str):
    """The frames the session's page receives: on connect, then while round 1 is answered."""
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", f"sessionid={cookie}".encode())]

    async def scenario():
        comm = WebsocketCommunicator(application, f"/ws/sessions/{session_id}/", headers=headers)
        connected, _ = await comm.connect(timeout=10)
        assert connected
        received = [await comm.receive_json_from(timeout=5)]
        await sync_to_async(send_feedback)(Session.objects.get(pk=session_id), "Look at the picture again.")
        while True:
            frame = await comm.receive_json_from(timeout=10)
            received.append(frame)
            if frame["type"] == "snapshot" and frame["session"]["rounds"][-1]["generation_status"] == "done":
                break
        await comm.disconnect()
        return received

    return run_isolated(scenario)


def frame_shapes(received):
    kinds = {}
    for frame in received:
        kinds.setdefault(frame["type"], shape(frame))
    return kinds


def test_a_check_is_indistinguishable_from_a_regular_item(simulated_model):
    batch = make_batch(models=[simulated_model], tasks=3, answer_type="number", ground_truth="7", category="count")
    gold = TaskFactory(batch=batch, is_gold=True, answer_type="number", ground_truth="9", category="count",
                       external_id="gold-check-1", metadata={"gold_feedback_terms": ["picture"]})
    work_items_create_for_batch(batch=batch)
    Batch.objects.filter(pk=batch.pk).update(gold_rate=0.5)  # one check in every two items, never the first
    batch.refresh_from_db()
    annotator = UserFactory()
    client = Client()
    client.force_login(annotator)
    cookie = client.cookies["sessionid"].value

    seen = {}
    while len(seen) < 2:
        session = assignment_next(annotator=annotator, batch=batch).session
        kind = "check" if session.task_id == gold.pk else "regular"
        run_pending_round(session)
        if kind in seen or session.status != Session.Status.AWAITING_FEEDBACK:
            finish(session.assignment)
            continue
        snapshot = session_snapshot(session_with_task(session.pk))
        page = client.get(reverse("session-page", args=[session.pk])).content.decode()
        api = client.get(reverse("api-session", args=[session.pk])).json()
        seen[kind] = {"snapshot": snapshot, "page": page, "api": api, "frames": frames(session.pk, cookie)}
        finish(session.assignment)

    check, regular = seen["check"], seen["regular"]
    assert shape(check["snapshot"]) == shape(regular["snapshot"])
    assert shape(check["api"]) == shape(regular["api"])
    assert elements(check["page"]) == elements(regular["page"])
    assert frame_shapes(check["frames"]) == frame_shapes(regular["frames"])
    assert {"snapshot", "chunk"} <= set(frame_shapes(regular["frames"]))  # streamed, then the final snapshot
    for key in ("snapshot", "page", "frames"):
        text, same = json.dumps(check[key]), json.dumps(regular[key])
        assert "gold-check-1" not in text  # the researchers' id for the task
        for word in ("gold", "judging", "reference", "check", "attention"):
            assert text.lower().count(word) == same.lower().count(word), (key, word)
        assert not re.search(r"/media-task/(?![0-9a-f]{64})", text)  # images only by their content hash
