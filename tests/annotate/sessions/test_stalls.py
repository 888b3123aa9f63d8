"""A round whose worker died is failed with Retry (not left running until Redis redelivers it), never run twice."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotate.models import Round, Session
from annotate.queue.services import assignment_next
from annotate.sessions import generation, stalls
from annotate.sessions.services import round_retry
from annotate.sessions.tasks import rounds_reap_stalled as reap_task
from tests.factories import make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(annotator, simulated_model, no_dispatch):
    """A session whose round 0 a worker claimed and beat for last at ``beat``."""
    session = assignment_next(annotator=annotator, batch=make_batch(models=[simulated_model])).session
    rnd = session.rounds.get()
    assert generation.round_claim(round_id=rnd.id, claim_token="task-1")

    def beat(seconds_ago: float) -> Round:
        Round.objects.filter(pk=rnd.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=seconds_ago),
                                               answer_text="Half an ans")
        rnd.refresh_from_db()
        return rnd

    return session, beat


def test_a_round_without_heartbeat_is_failed_with_retry(running, settings):
    session, beat = running
    rnd = beat(settings.STALLED_ROUND_GRACE_SECONDS + 1)
    assert stalls.rounds_reap_stalled() == 1
    rnd.refresh_from_db()
    session.refresh_from_db()
    assert rnd.generation_status == Round.Generation.FAILED and rnd.error == stalls.WORKER_STOPPED_MESSAGE
    assert rnd.claim_token != "task-1"
    assert session.status == Session.Status.FAILED
    assert stalls.rounds_reap_stalled() == 0  # once


def test_a_beating_round_is_left_alone(running, settings):
    session, beat = running
    rnd = beat(settings.STALLED_ROUND_GRACE_SECONDS - 5)
    assert stalls.rounds_reap_stalled() == 0
    rnd.refresh_from_db()
    assert rnd.generation_status == Round.Generation.RUNNING and rnd.claim_token == "task-1"


def test_the_dead_workers_message_never_runs_the_round_again(running, settings):
    session, beat = running
    beat(settings.STALLED_ROUND_GRACE_SECONDS + 1)
    stalls.rounds_reap_stalled()
    # Redis redelivers the dead worker's message (same task id, so the same claim token): nothing to claim.
    assert not generation.round_claim(round_id=session.rounds.get().id, claim_token="task-1")
    # A worker that was only slow loses the round at its next save.
    with pytest.raises(generation.ClaimLost):
        generation._save_partial(session.rounds.get(), "task-1", "more text", 3)


def test_retry_after_a_stall_runs_the_round_once(running, settings):
    session, beat = running
    beat(settings.STALLED_ROUND_GRACE_SECONDS + 1)
    stalls.rounds_reap_stalled()
    retried = round_retry(session_id=session.id, annotator=session.annotator)
    assert retried.generation_status == Round.Generation.QUEUED
    assert generation.round_claim(round_id=retried.id, claim_token="task-2")
    assert not generation.round_claim(round_id=retried.id, claim_token="task-1")  # the late redelivery
    generation.round_generate(round_id=retried.id, claim_token="task-2")
    retried.refresh_from_db()
    assert retried.generation_status == Round.Generation.DONE and session.rounds.count() == 1


def test_the_page_asking_for_the_state_reaps_its_own_round(running, settings, api_client):
    session, beat = running
    beat(settings.STALLED_ROUND_GRACE_SECONDS + 1)
    api_client.force_authenticate(session.annotator)
    body = api_client.get(f"/api/sessions/{session.id}/").json()
    assert body["status"] == Session.Status.FAILED
    assert body["rounds"][0]["error"] == stalls.WORKER_STOPPED_MESSAGE


def test_only_the_asking_session_is_reaped_by_the_page(running, settings, annotator, simulated_model):
    session, beat = running
    beat(settings.STALLED_ROUND_GRACE_SECONDS + 1)
    other = Session.objects.exclude(pk=session.pk).first()
    assert other is None or stalls.rounds_reap_stalled(session_id=other.pk) == 0
    assert session.rounds.get().generation_status == Round.Generation.RUNNING


def test_the_beat_task_reaps_every_stalled_round(running, settings):
    session, beat = running
    beat(settings.STALLED_ROUND_GRACE_SECONDS + 1)
    assert reap_task() == 1
    assert reap_task() == 0


def test_a_round_whose_message_was_lost_is_sent_again_and_still_runs_once(annotator, simulated_model, no_dispatch,
                                                                           monkeypatch, settings):
    # A Redis restarted without persistence loses the messages it held: the round would wait for ever.
    from django.core.cache import cache

    session = assignment_next(annotator=annotator, batch=make_batch(models=[simulated_model])).session
    rnd = session.rounds.get()
    cache.delete(f"round-requeued:{rnd.pk}")
    sent = []
    monkeypatch.setattr(stalls, "round_generation_queue", lambda round_id, config: sent.append(round_id))
    assert stalls.rounds_requeue_lost() == 0 and sent == []  # just queued: its message is on its way
    later = timezone.now() + timedelta(seconds=settings.ROUND_REQUEUE_SECONDS + 1)
    assert stalls.rounds_requeue_lost(now=later) == 1 and sent == [rnd.pk]
    assert stalls.rounds_requeue_lost(now=later) == 0  # at most once per ROUND_REQUEUE_SECONDS

    # Both messages arrive after all: the first claims and answers the round, the second finds nothing to do.
    generation.round_generate(round_id=rnd.pk, claim_token="first-message")
    generation.round_generate(round_id=rnd.pk, claim_token="sent-again")
    rnd.refresh_from_db()
    assert rnd.generation_status == Round.Generation.DONE and rnd.attempts == 1
