"""A person holds at most WEBSOCKETS_PER_USER WebSockets at once, counted across every web process in Redis: one
more is refused with close code 4429 (the page then polls the API); closing one frees its place; other people
are not affected. Each open socket costs the server a task and a channel-layer subscription, so one annotator
opening hundreds (300 were accepted) could starve everyone else."""

from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator

from annotate.config.asgi import application
from annotate.server import ws_limits
from tests.annotate.helpers import run_isolated
from tests.factories import UserFactory, make_batch
from tests.stack import login_cookie

pytestmark = pytest.mark.django_db(transaction=True)


def headers(user) -> list[tuple[bytes, bytes]]:
    return [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"),
            (b"cookie", f"sessionid={login_cookie(user)}".encode())]


@pytest.fixture
def capped(settings):
    settings.WEBSOCKETS_PER_USER = 3


def test_one_socket_over_the_cap_is_refused_and_a_closed_one_frees_its_place(capped, annotator, simulated_model,
                                                                           no_dispatch):
    from annotate.queue.services import assignment_next

    session = assignment_next(annotator=annotator, batch=make_batch(models=[simulated_model])).session
    someone_else = UserFactory(username="bob")
    ws_limits.forget(annotator.pk)  # user ids repeat across runs; Redis outlives the test database
    ws_limits.forget(someone_else.pk)
    mine, theirs = headers(annotator), headers(someone_else)
    path = f"/ws/sessions/{session.id}/"

    async def scenario():
        open_ones = []
        for _ in range(3):
            socket = WebsocketCommunicator(application, path, headers=mine)
            connected, _ = await socket.connect(timeout=10)
            assert connected
            open_ones.append(socket)
        extra = WebsocketCommunicator(application, path, headers=mine)
        refused = await extra.connect(timeout=10)
        other = WebsocketCommunicator(application, "/ws/sessions/1/", headers=theirs)
        other_result = await other.connect(timeout=10)  # not their session: 4404, not 4429
        await open_ones[0].disconnect()
        again = WebsocketCommunicator(application, path, headers=mine)
        reopened = await again.connect(timeout=10)
        for socket in [*open_ones[1:], again]:
            await socket.disconnect()
        return refused, other_result, reopened

    refused, other_result, reopened = run_isolated(scenario)
    assert refused == (False, ws_limits.CLOSE_TOO_MANY)
    assert other_result == (False, 4404)
    assert reopened[0] is True
    assert ws_limits.open_count(annotator.pk) == 0  # every place given back


def test_the_cap_counts_the_dashboard_too(capped, researcher):
    batch = make_batch(models=[], members=[researcher])
    ws_limits.forget(researcher.pk)
    mine = headers(researcher)

    async def scenario():
        sockets = [WebsocketCommunicator(application, f"/ws/batches/{batch.id}/dashboard/", headers=mine)
                   for _ in range(4)]
        results = [await socket.connect(timeout=10) for socket in sockets]
        for socket, (connected, _) in zip(sockets, results, strict=True):
            if connected:
                await socket.disconnect()
        return [connected for connected, _ in results], results[-1][1]

    connected, code = run_isolated(scenario)
    assert connected == [True, True, True, False] and code == ws_limits.CLOSE_TOO_MANY
