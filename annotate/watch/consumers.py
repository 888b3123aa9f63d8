"""The dashboard's WebSocket: a snapshot on connect, then a fresh one whenever the numbers change (checked every
DASHBOARD_REFRESH_SECONDS), so the researcher's page moves without reloading. No channel-layer group: one
snapshot query set per open dashboard every few seconds is cheaper than a message per round and session."""

from __future__ import annotations

import asyncio
import contextlib

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from annotate.errors import NotFound, PermissionDenied
from annotate.people.access import batch_for_researcher
from annotate.watch.selectors import batch_dashboard

CLOSE_NOT_ALLOWED = 4403


def _watchable_batch(user, batch_id: int):
    """The batch if the user may watch it (the pages' rule, annotate.people.access), else None."""
    try:
        return batch_for_researcher(user, batch_id)
    except (NotFound, PermissionDenied):
        return None


def _changed_part(snapshot: dict) -> dict:
    return {key: value for key, value in snapshot.items() if key != "generated_at"}


class DashboardConsumer(AsyncJsonWebsocketConsumer):
    pusher: asyncio.Task | None = None

    async def connect(self):
        user = self.scope.get("user")
        batch_id = int(self.scope["url_route"]["kwargs"]["batch_id"])
        self.batch = await database_sync_to_async(_watchable_batch)(user, batch_id) if user else None
        if self.batch is None:  # not signed in, not a researcher, or not a member: the same answer
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        await self.accept()
        self.pusher = asyncio.ensure_future(self._push_changes())

    async def _push_changes(self):
        last = None
        while True:
            snapshot = await database_sync_to_async(batch_dashboard)(self.batch)
            if _changed_part(snapshot) != last:
                last = _changed_part(snapshot)
                await self.send_json({"type": "dashboard", "dashboard": snapshot})
            await asyncio.sleep(settings.DASHBOARD_REFRESH_SECONDS)

    async def receive_json(self, content, **kwargs):
        """Nothing to receive: the page only listens."""

    async def disconnect(self, code):
        if self.pusher is not None:
            self.pusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.pusher
