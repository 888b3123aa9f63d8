"""An id beyond what the database can hold is an id that does not exist: 404, on SQLite as on PostgreSQL.

Every URL of the app with an integer in its path is asked for with a 26-digit id, by an admin (who may read
everything, so a 403 cannot hide a crash) over the pages and the API."""

from __future__ import annotations

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

HUGE = "9" * 26


def _paths_with_int_ids(patterns=None, prefix: str = "") -> list[str]:
    """Every route with an <int:...> converter, the integers replaced by HUGE and other parts by a plain value."""
    found = []
    for entry in patterns if patterns is not None else get_resolver().url_patterns:
        route = str(entry.pattern)
        if isinstance(entry, URLResolver):
            found += _paths_with_int_ids(entry.url_patterns, prefix + route)
        elif isinstance(entry, URLPattern) and "<int:" in prefix + route:
            path = re.sub(r"<int:\w+>", HUGE, prefix + route)
            path = re.sub(r"<(?:str|slug):\w+>", "x", path)
            path = re.sub(r"<\w+>", "x", path)
            found.append("/" + path.lstrip("^").rstrip("$"))
    return sorted(set(found))


PATHS = _paths_with_int_ids()


def test_there_are_paths_to_check():
    assert len(PATHS) > 30 and "/api/sessions/" + HUGE + "/" in PATHS


@pytest.fixture
def admin_client(client):
    client.force_login(UserFactory(username="root", role="admin", is_staff=True, is_superuser=True))
    return client


@pytest.mark.parametrize("path", PATHS)
def test_a_26_digit_id_is_404(admin_client, path):
    response = admin_client.get(path)
    assert response.status_code in (404, 405), (path, response.status_code)
    response = admin_client.post(path)
    # An empty body may be refused (400) before the id is looked up; never a server error.
    assert response.status_code in (400, 404, 405), (path, response.status_code)


@pytest.mark.parametrize("path, body", [
    ("/api/sessions/{id}/feedback/", {"feedback": "Look again.", "client_request_id": "r1"}),
    ("/api/sessions/{id}/draft/", {"draft": "Look"}),
    ("/api/sessions/{id}/skip/", {"reason": "image does not load"}),
])
def test_a_26_digit_id_with_a_good_body_is_404(admin_client, path, body):
    response = admin_client.post(path.format(id=HUGE), body, content_type="application/json")
    assert response.status_code == 404, response.content


@pytest.mark.django_db(transaction=True)
def test_a_26_digit_id_on_the_session_websocket_is_refused_as_missing(annotator):
    from channels.testing import WebsocketCommunicator

    from annotate.config.asgi import application
    from tests.annotate.helpers import run_isolated
    from tests.stack import login_cookie

    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"),
               (b"cookie", f"sessionid={login_cookie(annotator)}".encode())]

    async def scenario():
        communicator = WebsocketCommunicator(application, f"/ws/sessions/{HUGE}/", headers=headers)
        connected, code = await communicator.connect(timeout=10)
        await communicator.disconnect()
        return connected, code

    assert run_isolated(scenario) == (False, 4404)
