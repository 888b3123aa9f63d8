"""WebSocket consumers: authorize, join the group, relay events. No domain logic here.

Frames from the page get the checks HTTP bodies get (``annotate.server.json_limits``): a frame that is not a JSON object
of a known type, nests too deep, or holds text the database cannot store is answered with
``{"type": "error", "detail": ...}`` and the socket stays open.
"""

from __future__ import annotations

import json
import logging

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from redis.exceptions import RedisError

from annotate.errors import NotFound
from annotate.server.json_limits import DEPTH_MESSAGE, describe, too_deep, unstorable_text
from annotate.server.ws_threads import database_call
from annotate.sessions import realtime
from annotate.sessions.selectors import session_snapshot
from annotate.sessions.services import session_save_draft
from annotate.sessions.stalls import session_for_page

logger = logging.getLogger(__name__)

CLOSE_NOT_FOUND = 4404
CLOSE_UNAVAILABLE = 4503  # the channel layer (Redis) cannot be reached: the page retries later
MESSAGE_TYPES = ("draft", "snapshot")
CHANNEL_LAYER_ERRORS = (OSError, RedisError)  # Redis down or unreachable (channels_redis raises redis' own errors)


class FrameError(ValueError):
    """A frame the consumer refuses; the message is sent back to the page as is."""


def frame_problem(content) -> str | None:
    """What is wrong with a decoded frame from the page, or None."""
    if not isinstance(content, dict):
        return "Expected a JSON object such as {\"type\": \"draft\", \"draft\": \"...\"}."
    kind = content.get("type")
    if kind not in MESSAGE_TYPES:
        return f"Unknown message type {kind!r}; expected one of: {', '.join(MESSAGE_TYPES)}."
    if kind == "draft" and not isinstance(content.get("draft"), str):
        return "A draft message needs the draft text as a string in \"draft\"."
    found = unstorable_text(content)
    return describe(found) if found else None


class SessionConsumer(AsyncJsonWebsocketConsumer):
    """Live view of one session: a snapshot from the database on connect, then chunks and snapshots."""

    close_sent = False

    async def __call__(self, scope, receive, send):
        # The channel layer (Redis) fails on joining the group or in Channels' own receive loop, at connect or
        # later: either way the socket gets a close code the page can act on (it retries), not a traceback.
        try:
            await super().__call__(scope, receive, send)
        except CHANNEL_LAYER_ERRORS as error:
            logger.warning("WebSocket %s closed with %s: the channel layer cannot be reached (%s)",
                           scope.get("path"), CLOSE_UNAVAILABLE, error)
            if not self.close_sent:
                await send({"type": "websocket.close", "code": CLOSE_UNAVAILABLE})

    async def close(self, code=None, reason=None):
        self.close_sent = True
        await super().close(code, reason)

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.session_id = int(self.scope["url_route"]["kwargs"]["session_id"])
        # Join the group before reading the snapshot: an event published in between is then delivered
        # after the snapshot (the page drops what the snapshot already holds) instead of being lost.
        self.group = realtime.session_group(self.session_id)
        await self.channel_layer.group_add(self.group, self.channel_name)  # Redis down: see __call__
        try:
            snapshot = await self._snapshot(user)
        except NotFound:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.accept()
        await self.send_json({"type": "snapshot", "session": snapshot})

    @classmethod
    async def decode_json(cls, text_data):
        if too_deep(text_data):  # before json recurses into it
            raise FrameError(f"{DEPTH_MESSAGE}.")
        try:
            return json.loads(text_data)
        except ValueError as error:
            raise FrameError(f"The frame is not valid JSON ({error}).") from None

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        if text_data is None:
            await self.send_json({"type": "error", "detail": "Binary frames are not accepted; send JSON text."})
            return
        try:
            content = await self.decode_json(text_data)
        except FrameError as error:
            await self.send_json({"type": "error", "detail": str(error)})
            return
        problem = frame_problem(content)
        if problem:
            await self.send_json({"type": "error", "detail": problem, "id": _id_of(content)})
            return
        await self.receive_json(content, **kwargs)

    @database_call
    def _snapshot(self, user):
        # A round whose worker died is failed (with Retry) before the page gets the state.
        return session_snapshot(session_for_page(user, self.session_id))

    async def disconnect(self, code):
        if getattr(self, "group", None):
            try:
                await self.channel_layer.group_discard(self.group, self.channel_name)
            except CHANNEL_LAYER_ERRORS:  # the page is gone; the group's entry expires on its own
                logger.info("WebSocket %s: the channel layer was unreachable on disconnect", self.scope.get("path"))

    @database_call
    def _save_draft(self, user, draft: str):
        session_save_draft(session_id=self.session_id, draft=draft, annotator=user)

    async def receive_json(self, content, **kwargs):
        # The page autosaves its feedback draft over the socket it already holds (no HTTP request per save).
        if content.get("type") == "draft":
            try:
                await self._save_draft(self.scope["user"], content["draft"])
            except NotFound:  # not the annotator's own session (a researcher watching): nothing to save
                await self.send_json({"type": "draft_error", "id": content.get("id"),
                                      "detail": "Only the session's annotator can save a draft."})
                return
            await self.send_json({"type": "draft_saved", "id": content.get("id")})
            return
        # The client may ask for a fresh snapshot (after a gap in chunk sequence numbers).
        if content.get("type") == "snapshot":
            try:
                snapshot = await self._snapshot(self.scope["user"])
            except NotFound:
                await self.close(code=CLOSE_NOT_FOUND)
                return
            await self.send_json({"type": "snapshot", "session": snapshot})

    async def relay(self, message):
        await self.send_json(message["event"])


def _id_of(content) -> int | str | None:
    """The page's own message id, echoed in the answer when it is a plain value."""
    value = content.get("id") if isinstance(content, dict) else None
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


async def no_route(scope, receive, send):
    """Any WebSocket path without a route (``/ws/sessions/abc/``): refused with 4404 instead of an exception.
    A plain ASGI application: nothing to look up, and no channel layer to reach."""
    if scope["type"] == "websocket" and (await receive())["type"] == "websocket.connect":
        await send({"type": "websocket.close", "code": CLOSE_NOT_FOUND})
