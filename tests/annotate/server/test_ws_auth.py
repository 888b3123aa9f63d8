"""The session WebSocket authenticates with the login session's cookie, with Django's own checks."""

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.sessions.models import Session as LoginSession

from annotate.config.asgi import application
from tests.annotate.helpers import run_isolated

pytestmark = pytest.mark.django_db(transaction=True)


def connect(session_id: int, cookie: str | None):
    """(connected, close code, first message) for the project's whole WebSocket stack."""
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
    if cookie:
        headers.append((b"cookie", f"sessionid={cookie}".encode()))

    async def scenario():
        comm = WebsocketCommunicator(application, f"/ws/sessions/{session_id}/", headers=headers)
        connected, code = await comm.connect(timeout=10)
        first = await comm.receive_json_from(timeout=5) if connected else None
        await comm.disconnect()
        return connected, code, first

    return run_isolated(scenario)


def test_the_login_cookie_opens_the_annotators_session(session_and_cookie):
    session, cookie = session_and_cookie
    connected, _, first = connect(session.id, cookie)
    assert connected and first["type"] == "snapshot" and first["session"]["id"] == session.id


@pytest.mark.parametrize("cookie", [None, "not-a-session-key"])
def test_no_or_an_unknown_cookie_is_refused(session_and_cookie, cookie):
    session, _ = session_and_cookie
    assert connect(session.id, cookie)[:2] == (False, 4401)


def test_a_password_change_ends_the_sessions_sockets_too(session_and_cookie, annotator):
    session, cookie = session_and_cookie
    annotator.set_password("a new password")
    annotator.save()
    assert connect(session.id, cookie)[:2] == (False, 4401)
    assert not LoginSession.objects.filter(session_key=cookie).exists()  # flushed, as an HTTP request would
