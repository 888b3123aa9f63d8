"""What a participant's pages say: the last item's button names what comes next, a number question takes numbers,
a returning participant is greeted back, the completion page offers leaving until they finish; and on the
researchers' side the consent is kept with plain line ends and the invite form's inputs are typed."""

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from annotate.crowd import services as crowd
from annotate.crowd.study import study_document, study_update
from annotate.models import CrowdStudy
from annotate.queue.services import assignment_next
from tests.annotate.crowd.study_data import PRE_ANSWERS, STUDY, join, study_batch
from tests.annotate.helpers import finish

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


def _next_button(html: str) -> str:
    return re.search(r'id="next-button">([^<]*)<kbd>', html)[1].strip()


def _to_items(client, batch):
    user = join(client, batch)
    client.post(reverse("crowd-consent"), {"answer": "agree"})
    client.post(reverse("crowd-screening"), {"question": "leak", "answer": "No"})
    client.post(reverse("crowd-screening"), {"question": "rounds", "answer": "3"})
    client.post(reverse("crowd-survey", args=["pre"]), PRE_ANSWERS)
    return user


def test_the_last_items_button_says_what_comes_next(client, simulated_model):
    with_questions = study_batch(simulated_model)
    user = _to_items(client, with_questions)
    page = client.get(reverse("session-page", args=[assignment_next(annotator=user).session.pk])).content.decode()
    assert _next_button(page) == "Finish: last questions"  # the post-study questionnaire comes before the code

    plain = study_batch(simulated_model, study=False)
    other = Client()
    user = join(other, plain)
    page = other.get(reverse("session-page", args=[assignment_next(annotator=user).session.pk])).content.decode()
    assert _next_button(page) == "Finish: your completion code"


def test_a_number_question_is_a_number_input_with_its_bounds(client, simulated_model):
    batch = study_batch(simulated_model)
    user = _to_items(client, batch)
    finish(assignment_next(annotator=user))
    html = client.get(reverse("crowd-survey", args=["post"])).content.decode()
    field = re.search(r'<input[^>]*id="q-minutes"[^>]*>', html)[0]
    assert 'type="number"' in field and 'min="0"' in field and 'max="600"' in field


def test_a_returning_participant_is_greeted_back(client, simulated_model):
    batch = study_batch(simulated_model, study=False)
    _, token = crowd.invite_link_create(batch=batch, label="back")
    url = reverse("crowd-join", args=[token]) + "?PROLIFIC_PID=pid-back&STUDY_ID=s1&SESSION_ID=x1"
    first = client.get(url).content.decode()
    assert "<h1 id=\"join-title\">Welcome</h1>" in first and ">Start</button>" in first
    client.post(url)
    assignment_next(annotator=client.get(reverse("home")).wsgi_request.user)
    elsewhere = Client()  # another device: the Prolific id brings them back
    again = elsewhere.get(url).content.decode()
    assert "Welcome back" in again and ">Continue</button>" in again and ">Start</button>" not in again
    assert "Welcome back" in client.get(url).content.decode()  # and in the same browser
    assert "Welcome back" not in Client().get(url.replace("pid-back", "pid-new")).content.decode()


def test_the_completion_page_offers_leaving_until_they_finish(client, simulated_model):
    batch = study_batch(simulated_model, study=False)
    user = join(client, batch)
    assignment = assignment_next(annotator=user)
    assert 'id="leave-link"' in client.get(reverse("crowd-done")).content.decode()  # not finished yet
    finish(assignment)
    done = client.get(reverse("crowd-done")).content.decode()
    assert "ALL-DONE" in done and 'id="leave-link"' not in done  # finished: the code, nothing to leave


def test_the_consent_is_kept_with_plain_line_ends_from_the_page_and_the_api(simulated_model, researcher):
    batch = study_batch(simulated_model)
    batch.members.add(researcher)
    staff = Client()
    staff.force_login(researcher)
    form = {key: json.dumps(value) if isinstance(value, list) else "" if value is None else value
            for key, value in study_document(batch).items() if key not in ("consent_version", "attention_checks")}
    form["consent"] = "First line.\r\n\r\nSecond line.\r\n"  # as a browser sends a textarea
    response = staff.post(reverse("research-study", args=[batch.pk]), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert CrowdStudy.objects.get(batch=batch).consent_text == "First line.\n\nSecond line."
    response = staff.patch(reverse("api-batch-study", args=[batch.pk]), {"consent": "Third.\r\nFourth.\rFifth."},
                           content_type="application/json")
    assert response.status_code == 200 and response.json()["consent"] == "Third.\nFourth.\nFifth."
    study_update(batch=batch, settings={**STUDY, "consent": "A\r\nB"})  # the import settings take the same path
    assert CrowdStudy.objects.get(batch=batch).consent_text == "A\nB"


def test_the_invite_forms_inputs_are_typed_like_the_apps_other_forms(simulated_model, researcher):
    batch = study_batch(simulated_model, study=False)
    batch.members.add(researcher)
    staff = Client()
    staff.force_login(researcher)
    html = staff.get(reverse("research-invites", args=[batch.pk])).content.decode()
    form = html[html.index('id="new-link-form"'):html.index("</form>", html.index('id="new-link-form"'))]
    inputs = re.findall(r"<input[^>]*>", form)
    visible = [i for i in inputs if 'type="hidden"' not in i]
    assert len(visible) == 4 and all(re.search(r'type="(text|number)"', i) for i in visible)


def test_the_dashboards_pace_has_a_unit_and_one_decimal(simulated_model, researcher):
    batch = study_batch(simulated_model, study=False)
    batch.members.add(researcher)
    staff = Client()
    staff.force_login(researcher)
    html = staff.get(reverse("research-dashboard", args=[batch.pk])).content.decode()
    assert re.search(r'<span id="pace">\d+\.\d</span> completed</dd>', html)
