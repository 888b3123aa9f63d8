"""WebSocket consumers: authorize, join the group, relay events. No domain logic here."""

from __future__ import annotations

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from annotate import realtime
from annotate.errors import NotFound
from annotate.selectors.sessions import access_session, session_snapshot
from annotate.services.sessions import session_save_draft


class SessionConsumer(AsyncJsonWebsocketConsumer):
    """Live view of one session: a snapshot from the database on connect, then chunks and snapshots."""

    async def dispatch(self, message):
        # Channels hops to its database thread before every message to close stale connections. Every database
        # call here goes through database_sync_to_async, which does that itself in that thread, and most messages
        # (relayed chunks and snapshots) touch no database: that hop was a third of the socket's CPU under load.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.session_id = int(self.scope["url_route"]["kwargs"]["session_id"])
        # Join the group before reading the snapshot: an event published in between is then delivered
        # after the snapshot (the page drops what the snapshot already holds) instead of being lost.
        self.group = realtime.session_group(self.session_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        try:
            snapshot = await self._snapshot(user)
        except NotFound:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None
            await self.close(code=4404)
            return
        await self.accept()
        await self.send_json({"type": "snapshot", "session": snapshot})

    @database_sync_to_async
    def _snapshot(self, user):
        return session_snapshot(access_session(user, self.session_id))

    async def disconnect(self, code):
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    @database_sync_to_async
    def _save_draft(self, user, draft: str):
        session_save_draft(session_id=self.session_id, draft=draft, annotator=user)

    async def receive_json(self, content, **kwargs):
        # The page autosaves its feedback draft over the socket it already holds (no HTTP request per save).
        if content.get("type") == "draft" and isinstance(content.get("draft"), str):
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
                await self.close(code=4404)
                return
            await self.send_json({"type": "snapshot", "session": snapshot})

    async def relay(self, message):
        await self.send_json(message["event"])
