"""WebSocket frames get the checks HTTP bodies get: a bad frame is answered with an error frame and the socket
stays open; unknown paths and a channel layer that is down get a clean close code, not an exception."""

from __future__ import annotations

import json
import logging

import pytest
from channels.testing import WebsocketCommunicator

from annotate.config.asgi import application
from annotate.models import Session
from annotate.server.json_limits import DEPTH_MESSAGE
from annotate.sessions.consumers import CLOSE_NOT_FOUND, CLOSE_UNAVAILABLE
from tests.annotate.helpers import run_isolated
from tests.stack import free_port

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


@pytest.fixture
def redis_layer(settings, redis_url):
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [redis_url]}}
    }


def socket(path: str, cookie: str | None = None) -> WebsocketCommunicator:
    """The project's whole WebSocket stack (origin check, cookie auth, routing)."""
    headers = list(HEADERS) + ([(b"cookie", f"sessionid={cookie}".encode())] if cookie else [])
    return WebsocketCommunicator(application, path, headers=headers)


BAD_FRAMES = [  # (name, the frame as an ASGI message, what the error says)
    ("binary", {"bytes": b'{"type": "draft", "draft": "x"}'}, "Binary frames are not accepted"),
    ("not JSON", {"text": "draft: hello"}, "not valid JSON"),
    ("empty", {"text": ""}, "not valid JSON"),
    ("a list", {"text": '["draft", "x"]'}, "Expected a JSON object"),
    ("a string", {"text": '"draft"'}, "Expected a JSON object"),
    ("no type", {"text": '{"draft": "x"}'}, "Unknown message type None"),
    ("unknown type", {"text": '{"type": "feedback", "text": "x"}'}, "Unknown message type 'feedback'"),
    ("draft not text", {"text": '{"type": "draft", "draft": 5, "id": 3}'}, "draft text as a string"),
    ("NUL in draft", {"text": '{"type": "draft", "draft": "a\\u0000b", "id": 4}'},
     "Field 'draft' contains a NUL character"),
    ("lone surrogate", {"text": '{"type": "draft", "draft": "a\\ud83d", "id": 5}'},
     "Field 'draft' contains a lone surrogate"),
    ("nested lists", {"text": "[" * 5000 + "]" * 5000}, DEPTH_MESSAGE),
    ("nested objects", {"text": '{"type": "draft", "draft": "x", "n": ' + '{"a":' * 5000 + "1" + "}" * 5001},
     DEPTH_MESSAGE),
]


def test_every_bad_frame_gets_an_error_and_the_socket_stays_open(redis_layer, session_and_cookie, caplog):
    session, cookie = session_and_cookie

    async def scenario():
        comm = socket(f"/ws/sessions/{session.id}/", cookie)
        connected, _ = await comm.connect(timeout=10)
        assert connected
        assert (await comm.receive_json_from(timeout=5))["type"] == "snapshot"
        answers = []
        for _, frame, _ in BAD_FRAMES:
            await comm.send_input({"type": "websocket.receive", **frame})  # as the server hands frames over
            answers.append(await comm.receive_json_from(timeout=5))
        # Still open, and still working: a good draft after all of that is saved.
        await comm.send_json_to({"type": "draft", "draft": "Count the red ones", "id": 9})
        saved = await comm.receive_json_from(timeout=5)
        await comm.send_json_to({"type": "snapshot"})
        snapshot = await comm.receive_json_from(timeout=5)
        await comm.disconnect()
        return answers, saved, snapshot

    with caplog.at_level(logging.ERROR):
        answers, saved, snapshot = run_isolated(scenario)
    for (name, _, expected), answer in zip(BAD_FRAMES, answers, strict=True):
        assert answer["type"] == "error", name
        assert expected in answer["detail"], (name, answer)
    assert [a.get("id") for a in answers[7:10]] == [3, 4, 5]  # the page's message id comes back
    assert saved == {"type": "draft_saved", "id": 9}
    assert snapshot["type"] == "snapshot" and snapshot["session"]["feedback_draft"] == "Count the red ones"
    assert Session.objects.get(pk=session.pk).feedback_draft == "Count the red ones"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("path", ["/ws/sessions/abc/", "/ws/sessions/", "/ws/sessions/1/extra/", "/ws/", "/x",
                                  "/ws/sessions/1"])
def test_an_unknown_path_is_closed_cleanly(session_and_cookie, path, caplog):
    _, cookie = session_and_cookie

    async def scenario():
        comm = socket(path, cookie)
        result = await comm.connect(timeout=10)
        await comm.wait(timeout=5)  # the application ended without raising
        return result

    with caplog.at_level(logging.ERROR):
        assert run_isolated(scenario) == (False, CLOSE_NOT_FOUND)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_socket_opened_while_the_channel_layer_is_down_is_closed_with_a_code(settings, session_and_cookie,
                                                                                caplog):
    session, cookie = session_and_cookie
    settings.CHANNEL_LAYERS = {  # a port where nothing listens
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                    "CONFIG": {"hosts": [f"redis://127.0.0.1:{free_port()}/0"]}}
    }

    async def scenario():
        comm = socket(f"/ws/sessions/{session.id}/", cookie)
        result = await comm.connect(timeout=10)
        await comm.wait(timeout=10)  # the application ended without raising
        return result

    with caplog.at_level(logging.WARNING):
        assert run_isolated(scenario) == (False, CLOSE_UNAVAILABLE)
    lines = [r.getMessage() for r in caplog.records if r.name == "annotate.sessions.consumers"]
    assert any("channel layer" in line and f"/ws/sessions/{session.id}/" in line for line in lines), lines
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_frames_are_checked_before_the_draft_is_saved(redis_layer, session_and_cookie):
    """A refused frame writes nothing: the draft saved before it stays."""
    session, cookie = session_and_cookie

    async def scenario():
        comm = socket(f"/ws/sessions/{session.id}/", cookie)
        assert (await comm.connect(timeout=10))[0]
        await comm.receive_json_from(timeout=5)
        await comm.send_json_to({"type": "draft", "draft": "first", "id": 1})
        first = await comm.receive_json_from(timeout=5)
        await comm.send_to(text_data=json.dumps({"type": "draft", "draft": "second\x00", "id": 2}))
        second = await comm.receive_json_from(timeout=5)
        await comm.disconnect()
        return first, second

    first, second = run_isolated(scenario)
    assert first == {"type": "draft_saved", "id": 1}
    assert second["type"] == "error" and second["id"] == 2
    assert Session.objects.get(pk=session.pk).feedback_draft == "first"
