"""The session WebSocket over a real Redis channel layer: snapshot on connect, relayed chunks, access."""

import pytest
from channels.testing import WebsocketCommunicator

from annotate.queue.services import assignment_next
from annotate.sessions import realtime
from annotate.sessions.consumers import SessionConsumer
from tests.factories import make_batch

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_layer(settings, redis_url):
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [redis_url]}}
    }


def communicator(user, session_id):
    comm = WebsocketCommunicator(SessionConsumer.as_asgi(), f"/ws/sessions/{session_id}/")
    comm.scope["user"] = user
    comm.scope["url_route"] = {"kwargs": {"session_id": session_id}}
    return comm




def test_snapshot_then_chunks(redis_layer, annotator, simulated_model, no_dispatch):
    from asgiref.sync import async_to_sync

    batch = make_batch(models=[simulated_model])
    session = assignment_next(annotator=annotator, batch=batch).session

    async def scenario():
        comm = communicator(annotator, session.id)
        connected, _ = await comm.connect()
        assert connected
        first = await comm.receive_json_from(timeout=5)
        assert first["type"] == "snapshot" and first["session"]["id"] == session.id
        assert "ground_truth" not in first["session"]
        from channels.db import database_sync_to_async

        await database_sync_to_async(realtime.publish_chunk)(session.id, 0, 1, "Hello")
        chunk = await comm.receive_json_from(timeout=5)
        assert chunk == {"type": "chunk", "round": 0, "seq": 1, "text": "Hello"}
        await comm.disconnect()

    async_to_sync(scenario)()


def test_other_annotators_are_refused(redis_layer, annotator, outsider, simulated_model, no_dispatch):
    from asgiref.sync import async_to_sync

    batch = make_batch(models=[simulated_model])
    session = assignment_next(annotator=annotator, batch=batch).session

    async def scenario():
        comm = communicator(outsider, session.id)
        connected, code = await comm.connect()
        assert not connected and code == 4404

    async_to_sync(scenario)()


async def reply_of_type(comm, *types):
    """The next message of one of these types (a worker elsewhere on the same Redis may stream other events)."""
    while True:
        message = await comm.receive_json_from(timeout=5)
        if message["type"] in types:
            return message


def test_draft_autosave_over_the_socket(redis_layer, annotator, simulated_model, no_dispatch):
    from asgiref.sync import async_to_sync

    from annotate.models import Session

    batch = make_batch(models=[simulated_model])
    session = assignment_next(annotator=annotator, batch=batch).session

    async def scenario():
        comm = communicator(annotator, session.id)
        assert (await comm.connect())[0]
        await comm.receive_json_from(timeout=5)  # the snapshot
        await comm.send_json_to({"type": "draft", "draft": "Count the red ones again", "id": 7})
        assert await reply_of_type(comm, "draft_saved", "draft_error") == {"type": "draft_saved", "id": 7}
        await comm.disconnect()

    async_to_sync(scenario)()
    assert Session.objects.get(pk=session.pk).feedback_draft == "Count the red ones again"


def test_a_researcher_watching_cannot_write_the_draft(redis_layer, annotator, researcher, simulated_model,
                                                      no_dispatch):
    from asgiref.sync import async_to_sync

    from annotate.models import Session

    batch = make_batch(models=[simulated_model])
    batch.members.add(researcher)
    session = assignment_next(annotator=annotator, batch=batch).session

    async def scenario():
        comm = communicator(researcher, session.id)
        assert (await comm.connect())[0]  # researchers of the batch may watch
        await comm.receive_json_from(timeout=5)
        await comm.send_json_to({"type": "draft", "draft": "not mine", "id": 1})
        reply = await reply_of_type(comm, "draft_saved", "draft_error")
        assert reply["type"] == "draft_error" and "annotator" in reply["detail"]
        await comm.disconnect()

    async_to_sync(scenario)()
    assert Session.objects.get(pk=session.pk).feedback_draft == ""
