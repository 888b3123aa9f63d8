"""axe-core on the pages of a crowd study, in every state a participant or a researcher meets them: zero serious or
critical violations (tests/browser/test_accessibility.py's approach), in English and in Chinese."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotate.crowd import services as crowd
from annotate.crowd.study import study_update
from annotate.models import Batch
from annotate.queue.services import assignment_next
from tests.annotate.crowd.study_data import STUDY
from tests.annotate.helpers import finish
from tests.browser.conftest import login
from tests.browser.test_accessibility import assert_accessible
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def study(no_dispatch):
    researcher = UserFactory(username="a11y-crowd-rita", role="researcher")
    batch = make_batch(models=[ModelConfigFactory(name="a11y-crowd")], tasks=3, members=[researcher])
    Batch.objects.filter(pk=batch.pk).update(items_per_participant=1)
    crowd.batch_set_completion_code(batch=batch, code="A11Y-DONE")
    study_update(batch=batch, settings={**STUDY, "time_limit_minutes": 60})
    _, token = crowd.invite_link_create(batch=batch, label="a11y")
    return batch, token, researcher


def join(page, base, token, pid):
    page.goto(f"{base}/join/{token}/?PROLIFIC_PID={pid}")
    page.locator("#join-button").click()
    page.wait_for_url("**/study/consent/")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_participant_pages(browser, live_server, study, language):
    batch, token, _ = study
    base = live_server.url
    context = browser.new_context(locale="zh-CN" if language == "zh-hans" else "en-US")
    page = context.new_page()
    try:
        join(page, base, token, f"A11Y-{language}")
        expect(page.locator("#consent-title")).to_have_text("开始之前" if language == "zh-hans" else "Before you start")
        assert_accessible(page, "consent")
        page.locator("#consent-agree").click()
        assert_accessible(page, "screening question")
        page.locator("input[name=answer]").first.check()  # "Yes": wrong
        page.locator("#screening-submit").click()
        expect(page.locator("#second-try")).to_be_visible()
        assert_accessible(page, "screening question, second try")
        page.locator("input[name=answer][value=No]").check()
        page.locator("#screening-submit").click()
        expect(page.locator("#screening-explanation")).to_be_visible()
        assert_accessible(page, "screening result")
        page.locator("#screening-continue").click()
        page.locator("input[name=answer][value='3']").check()
        page.locator("#screening-submit").click()
        page.locator("#screening-continue").click()
        page.wait_for_url("**/study/survey/pre/")
        assert_accessible(page, "pre-study questionnaire")
        page.locator("#survey-submit").click()
        expect(page.locator("#survey-errors")).to_be_visible()
        assert_accessible(page, "pre-study questionnaire with errors")
        page.locator("input[name=english][value='3']").check()
        page.locator("input[name=device]").first.check()
        page.locator("#survey-submit").click()
        page.wait_for_url(f"{base}/")
        assert_accessible(page, "participant home")
        page.goto(f"{base}{reverse('crowd-leave')}")
        assert_accessible(page, "leave the study")
        from annotate.models import User

        user = User.objects.get(external_id=f"A11Y-{language}")
        finish(assignment_next(annotator=user))
        page.goto(f"{base}{reverse('crowd-done')}")
        page.wait_for_url("**/study/survey/post/")
        assert_accessible(page, "post-study questionnaire")
        page.locator("input[name=tools]").first.check()
        page.locator("#q-minutes").fill("5")
        page.locator("#survey-submit").click()
        page.wait_for_url("**/done/")
        expect(page.locator("#completion-code")).to_have_text("A11Y-DONE")
        assert_accessible(page, "completion code")

        other = browser.new_context(locale="zh-CN" if language == "zh-hans" else "en-US").new_page()
        join(other, base, token, f"A11Y-OUT-{language}")
        other.locator("#consent-decline").click()
        expect(other.locator("#end-code")).to_have_text("NO-CONSENT")
        assert_accessible(other, "ended: declined the consent")
        other.context.close()
    finally:
        context.close()


def test_the_researcher_pages(page, live_server, study):
    batch, token, researcher = study
    participant = browser_join_and_leave(page, live_server.url, token)
    assert participant
    page.context.clear_cookies()
    login(page, live_server.url, researcher.username)
    for name, url in [("study settings", reverse("research-study", args=[batch.id])),
                      ("participants", reverse("research-participants", args=[batch.id])),
                      ("dashboard with participants", reverse("research-dashboard", args=[batch.id])),
                      ("quality with attention checks", reverse("research-quality", args=[batch.id]))]:
        page.goto(f"{live_server.url}{url}")
        assert_accessible(page, name)
    page.goto(f"{live_server.url}{reverse('research-study', args=[batch.id])}")
    page.locator("#id_screening").fill("[{\"text\": \"Q?\"}]")
    page.locator("#study-submit").click()
    expect(page.locator("#study-form .error").first).to_be_visible()
    assert_accessible(page, "study settings with errors")


def browser_join_and_leave(page, base, token) -> bool:
    join(page, base, token, "A11Y-LEFT")
    page.locator("#consent-agree").click()
    page.goto(f"{base}{reverse('crowd-leave')}")
    page.locator("#leave-confirm").click()
    expect(page.locator("#end-reason")).to_be_visible()
    return True
