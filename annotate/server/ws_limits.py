"""At most WEBSOCKETS_PER_USER WebSockets per signed-in person at once, across every web process.

Each open socket holds a lease in a Redis sorted set of its own person (annotate.server.leases), renewed while it
stays open and given back when it closes; a web process that dies leaves leases that lapse after
LEASE_SECONDS. One socket more is refused with close code 4429 before any consumer runs (the pages then poll the
API and try again later). An ASGI middleware inside Channels' AuthMiddlewareStack, around the URL router, so every
WebSocket route counts. 0 turns the cap off.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from functools import cache

import redis
from asgiref.sync import sync_to_async
from django.conf import settings
from redis.exceptions import RedisError

from annotate.server.leases import lease_release, lease_renew, lease_take, leases_held

logger = logging.getLogger(__name__)

CLOSE_TOO_MANY = 4429
LEASE_SECONDS = 300  # how long a dead process's sockets keep their places
RENEW_SECONDS = 60
_KEY = "websockets-open:user:{}"


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL)


def open_count(user_id: int) -> int:
    return leases_held(_redis(), _KEY.format(user_id))


def forget(user_id: int) -> None:
    """Drop a person's leases (tests: user ids repeat across runs, Redis outlives the database)."""
    _redis().delete(_KEY.format(user_id))


def _call(function, *args, **kwargs):
    return sync_to_async(function, thread_sensitive=False)(_redis(), *args, **kwargs)


class WebSocketsPerUser:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        user = scope.get("user")
        limit = settings.WEBSOCKETS_PER_USER
        if scope["type"] != "websocket" or not limit or user is None or not user.is_authenticated:
            return await self.app(scope, receive, send)
        key, token = _KEY.format(user.pk), uuid.uuid4().hex
        try:
            taken, _ = await _call(lease_take, key, limit=limit, lapses_in=LEASE_SECONDS, token=token)
        except (OSError, RedisError) as error:  # Redis down: the consumer reports it (its channel layer fails too)
            logger.warning("WebSocket cap not checked for user %s: %s", user.pk, error)
            return await self.app(scope, receive, send)
        if not taken:
            if (await receive())["type"] == "websocket.connect":
                await send({"type": "websocket.close", "code": CLOSE_TOO_MANY})
            return None
        renewing = asyncio.ensure_future(self._renew(key, token))
        try:
            return await self.app(scope, receive, send)
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
            with contextlib.suppress(OSError, RedisError):
                await _call(lease_release, key, token)

    async def _renew(self, key: str, token: str) -> None:
        while True:
            await asyncio.sleep(RENEW_SECONDS)
            with contextlib.suppress(OSError, RedisError):
                await _call(lease_renew, key, lapses_in=LEASE_SECONDS, token=token)
