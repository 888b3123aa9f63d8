"""Rounds whose worker died: failed with Retry instead of staying "running" until Redis redelivers their message
(the visibility timeout, 15 minutes by default). And rounds whose message was lost before any worker took it (a
Redis restarted without persistence, a flushed queue): queued again instead of waiting for ever.

A worker touches its round's ``heartbeat_at`` every ROUND_HEARTBEAT_SECONDS (annotate.sessions.generation). A
running round whose heartbeat is older than STALLED_ROUND_GRACE_SECONDS is failed with a conditional UPDATE keyed
on the claim token and the heartbeat it was judged by, and its claim token is replaced: a worker that was only
slow loses its claim at its next save (ClaimLost), and the dead worker's message, redelivered later, finds nothing
to claim. So a round never runs twice at once. Called by celery beat every few seconds and when the page asks
(the session API and the WebSocket snapshot).
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotate.models import Round, RoundFailure, Session, User
from annotate.sessions.failures import WORKER_STOPPED_MESSAGE, round_failure_record
from annotate.sessions.generation import publish_session
from annotate.sessions.selectors import access_session
from annotate.sessions.services import round_generation_queue

logger = logging.getLogger(__name__)


def _stale(now: datetime):
    cutoff = now - timedelta(seconds=settings.STALLED_ROUND_GRACE_SECONDS)
    return Round.objects.filter(generation_status=Round.Generation.RUNNING, heartbeat_at__lt=cutoff)


def rounds_reap_stalled(*, now: datetime | None = None, session_id: int | None = None) -> int:
    """Fail the running rounds whose worker stopped beating (of one session, or all); returns how many."""
    now = now or timezone.now()
    stale = _stale(now)
    if session_id is not None:
        stale = stale.filter(session_id=session_id)
    reaped = 0
    for round_id, claim_token, heartbeat_at, stalled_session in stale.values_list(
        "id", "claim_token", "heartbeat_at", "session_id"
    )[:500]:
        with transaction.atomic():
            taken = Round.objects.filter(
                pk=round_id, generation_status=Round.Generation.RUNNING, claim_token=claim_token,
                heartbeat_at=heartbeat_at,
            ).update(generation_status=Round.Generation.FAILED, error=WORKER_STOPPED_MESSAGE, finished_at=now,
                     claim_token=f"stalled-{uuid.uuid4().hex}")
            if not taken:  # it beat, finished or was reaped meanwhile
                continue
            round_failure_record(round_id=round_id, cause=RoundFailure.Cause.WORKER_STOPPED)
            Session.objects.filter(pk=stalled_session, status=Session.Status.GENERATING).update(
                status=Session.Status.FAILED)
            transaction.on_commit(lambda sid=stalled_session: publish_session(sid))
        logger.warning("round %s: no heartbeat since %s; failed with Retry", round_id, heartbeat_at)
        reaped += 1
    return reaped


def rounds_requeue_lost(*, now: datetime | None = None) -> int:
    """Send again the rounds still waiting for a worker ROUND_REQUEUE_SECONDS after they were queued (or retried),
    at most once per that time each; returns how many. A second message is harmless: one worker claims the round
    and any other finds nothing to do, so a round still never runs twice."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.ROUND_REQUEUE_SECONDS)
    waiting = (Round.objects.filter(generation_status=Round.Generation.QUEUED, created_at__lt=cutoff,
                                    session__status=Session.Status.GENERATING, session__bench_run__isnull=True)
               .filter(Q(finished_at__isnull=True) | Q(finished_at__lt=cutoff))  # a retry: queued when it failed
               .select_related("session__model_config").order_by("pk")[:200])
    sent = 0
    for rnd in waiting:
        if cache.add(f"round-requeued:{rnd.pk}", 1, timeout=settings.ROUND_REQUEUE_SECONDS):
            round_generation_queue(rnd.pk, rnd.session.model_config)
            logger.warning("round %s: still queued after %s s; sent again", rnd.pk, settings.ROUND_REQUEUE_SECONDS)
            sent += 1
    return sent


def session_reap_if_stalled(*, session: Session) -> bool:
    """When the page asks: a generating session's round is checked for a dead worker (one indexed UPDATE's worth
    of work, and only while the model is answering)."""
    if session.status != Session.Status.GENERATING:
        return False
    return bool(rounds_reap_stalled(session_id=session.pk))


def session_for_page(user: User, session_id: int) -> Session:
    """A session the user may see, its round failed first if its worker stopped: what the page gets when it asks
    for the state (the session API, the WebSocket snapshot)."""
    session = access_session(user, session_id)
    if session_reap_if_stalled(session=session):
        session = access_session(user, session_id)
    return session
