"""The channel layer as configured in settings, on a real Redis: idle receivers survive, and the worker-side
publisher reuses one event loop (and so one Redis connection pool) across chunks."""

import asyncio

from channels_redis.core import RedisChannelLayer

from annotate.config import settings as project_settings
from annotate.sessions import realtime
from tests.annotate.helpers import run_isolated


def project_layer() -> RedisChannelLayer:
    # tests/annotate/conftest.py swaps in the in-memory layer; these tests need the project's own config.
    return RedisChannelLayer(**project_settings.CHANNEL_LAYERS["default"]["CONFIG"])


def test_an_idle_receiver_outlives_the_redis_read_timeout(redis_url):
    layer = project_layer()

    async def scenario():
        channel = await layer.new_channel()
        receiver = asyncio.ensure_future(layer.receive(channel))
        # Longer than redis-py 8's default 5 s socket timeout, which used to kill every idle WebSocket.
        await asyncio.sleep(6)
        assert not receiver.done(), receiver.exception()
        await layer.send(channel, {"type": "relay", "event": {"type": "chunk"}})
        message = await asyncio.wait_for(receiver, 5)
        await layer.flush()
        return message

    assert run_isolated(scenario)["event"] == {"type": "chunk"}


def test_publishes_from_sync_code_share_one_loop_and_arrive_in_order(redis_url, settings):
    settings.CHANNEL_LAYERS = project_settings.CHANNEL_LAYERS
    layer = project_layer()

    async def listen():
        channel = await layer.new_channel()
        await layer.group_add(realtime.session_group(4242), channel)
        return channel

    channel = run_isolated(listen)
    realtime.publish_chunk(4242, 1, 1, "Hello ")
    loop = realtime._publisher.loop()
    realtime.publish_chunk(4242, 1, 2, "world")
    assert realtime._publisher.loop() is loop and loop.is_running()

    async def drain():
        first = await asyncio.wait_for(layer.receive(channel), 5)
        second = await asyncio.wait_for(layer.receive(channel), 5)
        await layer.flush()
        return [first["event"]["text"], second["event"]["text"]]

    assert run_isolated(drain) == ["Hello ", "world"]
