"""An invited participant's way through a crowd study, by its pages and services: consent, screening with two
tries a question, the questionnaires, the completion code only at the end, and the ends (declined, screened out,
returned, timed out, failed attention checks) that free held items at once and never show the completion code."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate.assignments import assignment_current
from annotate.crowd import services as crowd
from annotate.crowd.ending import participations_time_out
from annotate.crowd.flow import participant_where
from annotate.crowd.study import study_update
from annotate.models import Assignment, Batch, Participation, ScreeningAnswer, SurveyResponse, WorkItem
from annotate.queue.services import assignment_next
from tests.annotate.crowd.study_data import POST_ANSWERS, PRE_ANSWERS, STUDY, join
from tests.annotate.helpers import finish
from tests.factories import UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


@pytest.fixture
def batch(simulated_model):
    batch = make_batch(models=[simulated_model], tasks=3)
    crowd.batch_set_completion_code(batch=batch, code="ALL-DONE")
    Batch.objects.filter(pk=batch.pk).update(items_per_participant=1)
    batch.refresh_from_db()
    return batch


@pytest.fixture
def study_batch(batch):
    study_update(batch=batch, settings=STUDY)
    return batch


def follow(client, url):
    """GET, following redirects; the final response."""
    return client.get(url, follow=True)


def screening_right(client):
    client.post(reverse("crowd-screening"), {"question": "leak", "answer": "No"})
    client.post(reverse("crowd-screening"), {"question": "rounds", "answer": "3"})


def test_a_study_that_asks_nothing_serves_items_at_once(client, batch):
    user = join(client, batch)
    assert client.get(reverse("home")).status_code == 200  # no step before the items: home as before
    assert assignment_next(annotator=user) is not None
    assert participant_where(user).stage == "items"


def test_the_steps_come_in_order_and_the_items_only_after_them(client, study_batch):
    user = join(client, study_batch, pid="pid-order")
    assert client.get(reverse("home"))["Location"] == reverse("crowd-study")
    page = follow(client, reverse("crowd-study"))
    assert page.redirect_chain[-1][0] == reverse("crowd-consent")
    assert "<strong>Your answers are kept under a pseudonym.</strong>" in page.content.decode()
    assert assignment_next(annotator=user) is None  # nothing is served before the consent
    response = client.post(reverse("api-next"), {}, content_type="application/json")
    assert response.json() == {"state": "study", "url": reverse("crowd-study")}

    client.post(reverse("crowd-consent"), {"answer": "agree"})
    participation = Participation.objects.get(user=user)
    assert participation.consent_version == 1 and participation.consented_at is not None
    page = follow(client, reverse("crowd-study"))
    html = page.content.decode()
    assert page.redirect_chain[-1][0] == reverse("crowd-screening") and "Question 1 of 2" in html
    assert "by itself" not in html  # neither the answer's explanation ...
    assert 'value="No" checked' not in html  # ... nor a preselected answer before it is answered
    assert assignment_next(annotator=user) is None

    first = client.post(reverse("crowd-screening"), {"question": "leak", "answer": "Yes"})
    assert first["Location"] == reverse("crowd-screening")  # a second try, without the answer
    again = client.get(reverse("crowd-screening")).content.decode()
    assert "one more try" in again and "by itself" not in again
    second = client.post(reverse("crowd-screening"), {"question": "leak", "answer": "No"})
    result = client.get(second["Location"]).content.decode()
    assert "by itself" in result and "Right" in result  # the explanation, once the question is done with
    client.post(reverse("crowd-screening"), {"question": "rounds", "answer": "3"})
    participation.refresh_from_db()
    assert participation.screening_passed is True and participation.screening_score == 2

    assert follow(client, reverse("crowd-study")).redirect_chain[-1][0] == reverse("crowd-survey", args=["pre"])
    missing = client.post(reverse("crowd-survey", args=["pre"]), {"english": "4"})
    assert missing.status_code == 400 and "Please answer this question." in missing.content.decode()
    client.post(reverse("crowd-survey", args=["pre"]), PRE_ANSWERS)
    assert SurveyResponse.objects.get(participation=participation, phase="pre").answers == PRE_ANSWERS
    assert client.get(reverse("crowd-study"))["Location"] == reverse("home")
    assert assignment_next(annotator=user) is not None  # the items, at last


def test_the_code_comes_after_the_last_questionnaire(client, study_batch):
    user = join(client, study_batch)
    client.post(reverse("crowd-consent"), {"answer": "agree"})
    screening_right(client)
    client.post(reverse("crowd-survey", args=["pre"]), PRE_ANSWERS)
    finish(assignment_next(annotator=user))
    done = client.get(reverse("crowd-done"))
    assert done["Location"] == reverse("crowd-study")  # not the code: the post-study questionnaire first
    assert follow(client, reverse("crowd-study")).redirect_chain[-1][0] == reverse("crowd-survey", args=["post"])
    bad = client.post(reverse("crowd-survey", args=["post"]), {"tools": ["Question", "Nose"], "minutes": "700"})
    html = bad.content.decode()
    assert bad.status_code == 400 and "Choose among the options shown." in html and "from 0 to 600" in html
    client.post(reverse("crowd-survey", args=["post"]), {"tools": ["Question", "Image"], "minutes": "12"})
    stored = SurveyResponse.objects.get(phase="post").answers
    assert stored == {"tools": ["Image", "Question"], "minutes": 12, "comments": None}  # options in their order
    assert "ALL-DONE" in client.get(reverse("crowd-done")).content.decode()
    assert Participation.objects.get(user=user).finished_at is not None
    again = client.post(reverse("crowd-survey", args=["post"]), POST_ANSWERS)
    assert again.status_code == 302 and SurveyResponse.objects.filter(phase="post").count() == 1  # answered once


def test_a_participant_screened_out_never_reaches_the_items(client, study_batch):
    user = join(client, study_batch, pid="pid-screened")
    client.post(reverse("crowd-consent"), {"answer": "agree"})
    client.post(reverse("crowd-screening"), {"question": "leak", "answer": "Yes"})
    client.post(reverse("crowd-screening"), {"question": "leak", "answer": "Yes"})  # wrong twice: out already
    participation = Participation.objects.get(user=user)
    assert participation.end_reason == "screened_out" and participation.screening_passed is False
    page = follow(client, reverse("crowd-done")).content.decode()
    assert "SCREENED-OUT" in page and "ALL-DONE" not in page
    assert assignment_next(annotator=user) is None
    assert not Assignment.objects.filter(annotator=user).exists()  # screening answers are kept apart
    assert ScreeningAnswer.objects.filter(participation=participation).count() == 2


def test_declining_the_consent_ends_politely_with_its_code(client, study_batch):
    user = join(client, study_batch)
    client.post(reverse("crowd-consent"), {})  # neither button: nothing decided
    assert Participation.objects.get(user=user).ended_at is None
    client.post(reverse("crowd-consent"), {"answer": "decline"})
    page = follow(client, reverse("home")).content.decode()
    assert "NO-CONSENT" in page and "did not agree" in page and "ALL-DONE" not in page
    assert Participation.objects.get(user=user).end_reason == "no_consent"
    assert assignment_next(annotator=user) is None


def test_returning_frees_the_held_item_at_once(client, batch):
    user = join(client, batch)
    held = assignment_next(annotator=user)
    item = WorkItem.objects.get(pk=held.work_item_id)
    assert item.active_count == 1
    assert "Leave the study?" in client.get(reverse("crowd-leave")).content.decode()
    client.post(reverse("crowd-leave"))
    held.refresh_from_db()
    item.refresh_from_db()
    assert held.status == Assignment.Status.EXPIRED and item.active_count == 0  # freed now, not when its lease ends
    assert assignment_current(annotator=user) is None and assignment_next(annotator=user) is None
    assert assignment_next(annotator=UserFactory()).work_item_id == item.id  # the next person gets it at once
    page = follow(client, reverse("crowd-done")).content.decode()
    assert "You have left this study" in page and "ALL-DONE" not in page


def test_past_the_time_limit_the_participation_ends_and_the_item_is_freed(client, batch):
    study_update(batch=batch, settings={"time_limit_minutes": 30})
    user = join(client, batch)
    held = assignment_next(annotator=user)
    assert participations_time_out() == 0
    Participation.objects.filter(user=user).update(started_at=timezone.now() - timedelta(minutes=31))
    assert assignment_next(annotator=user).pk == held.pk  # their item under way resumes until the sweep ...
    assert participations_time_out() == 1  # ... Celery beat's, every few seconds
    held.refresh_from_db()
    assert held.status == Assignment.Status.EXPIRED and WorkItem.objects.get(pk=held.work_item_id).active_count == 0
    assert Participation.objects.get(user=user).end_reason == "timed_out"
    assert "time allowed for this study has run out" in follow(client, reverse("home")).content.decode()


def test_a_participant_past_the_limit_is_ended_by_their_next_request(client, batch):
    study_update(batch=batch, settings={"time_limit_minutes": 30})
    user = join(client, batch)
    Participation.objects.filter(user=user).update(started_at=timezone.now() - timedelta(hours=2))
    assert assignment_next(annotator=user) is None  # the queue's gate already refuses
    follow(client, reverse("home"))
    assert Participation.objects.get(user=user).end_reason == "timed_out"


def test_annotators_with_an_account_have_no_study_pages(client, annotator):
    client.force_login(annotator)
    for name in ("crowd-study", "crowd-consent", "crowd-screening", "crowd-leave"):
        assert client.get(reverse(name)).status_code == 404
    assert client.get(reverse("crowd-survey", args=["pre"])).status_code == 404


def test_a_finished_participant_keeps_their_code_when_the_study_changes(client, batch):
    user = join(client, batch)
    finish(assignment_next(annotator=user))
    assert "ALL-DONE" in client.get(reverse("crowd-done")).content.decode()
    study_update(batch=batch, settings=STUDY)  # a consent, a screening, questionnaires for newcomers
    assert "ALL-DONE" in client.get(reverse("crowd-done")).content.decode()
    assert participant_where(user).stage == "finished"
