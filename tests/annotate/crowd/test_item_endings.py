"""Why an item under way ended, as the session API tells its participant (``ended_as``): the participant left the
study, the study's time limit passed, failed attention checks ended the participation, or the lease ran out."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate.assignments import assignments_expire
from annotate.crowd.ending import participation_end, participations_time_out
from annotate.crowd.study import study_update
from annotate.models import Assignment, Participation, Session
from annotate.queue.services import assignment_next
from tests.annotate.crowd.study_data import join, study_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


@pytest.fixture
def working(client, simulated_model):
    """A participant with an item under way: (their session, their participation)."""
    batch = study_batch(simulated_model, study=False)
    user = join(client, batch)
    assignment = assignment_next(annotator=user)
    return assignment.session, Participation.objects.get(user=user)


def _ended_as(client, session: Session) -> str:
    snapshot = client.get(reverse("api-session", args=[session.pk])).json()
    assert snapshot["status"] == Session.Status.ABANDONED
    return snapshot["ended_as"]


def test_leaving_the_study_says_so(client, working):
    session, _ = working
    client.post(reverse("crowd-leave"))
    assert _ended_as(client, session) == "returned"
    page = client.get(reverse("session-page", args=[session.pk])).content.decode()
    assert '"ended_as": "returned"' in page  # the page's first snapshot already says why


def test_the_time_limit_says_so(client, working):
    session, participation = working
    study_update(batch=participation.batch, settings={"time_limit_minutes": 30})
    Participation.objects.filter(pk=participation.pk).update(started_at=timezone.now() - timedelta(minutes=31))
    assert participations_time_out() == 1
    assert _ended_as(client, session) == "timed_out"


def test_failed_attention_checks_say_so(client, working):
    session, participation = working
    participation_end(participation, Participation.End.ATTENTION)
    assert _ended_as(client, session) == "attention"


def test_a_lease_run_out_before_the_participant_left_still_says_expired(client, working):
    session, _ = working
    Assignment.objects.filter(session=session).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert assignments_expire() == 1
    client.post(reverse("crowd-leave"))  # the end came after: it freed nothing of this item
    assert _ended_as(client, session) == "expired"


def test_a_skipped_item_says_skipped_even_after_the_participant_left(client, working):
    session, _ = working
    response = client.post(reverse("api-session-skip", args=[session.pk]), {"reason": "image does not load"},
                           content_type="application/json")
    assert response.status_code == 204
    client.post(reverse("crowd-leave"))
    assert _ended_as(client, session) == "skipped"
