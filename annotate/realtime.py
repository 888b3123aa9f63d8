"""The only module that touches the channel layer: group names and publishing.

The database is the source of truth; these events are best effort (a client that misses one reloads the
snapshot). Chunks carry per-round sequence numbers so a client can drop those already in its snapshot.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)


def session_group(session_id: int) -> str:
    return f"session.{session_id}"


def _send(group: str, event: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, {"type": "relay", "event": event})
    except Exception:  # a dead channel layer must not fail the round: the DB already has the text
        logger.warning("could not publish %s to %s", event.get("type"), group, exc_info=True)


def publish_chunk(session_id: int, round_index: int, seq: int, text: str) -> None:
    _send(session_group(session_id), {"type": "chunk", "round": round_index, "seq": seq, "text": text})


def publish_snapshot(session_id: int, snapshot: dict) -> None:
    _send(session_group(session_id), {"type": "snapshot", "session": snapshot})
