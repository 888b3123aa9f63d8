"""A participant's item freed by the end of their study says why on its page, and its header does not say
"finished"."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotate.crowd import services as crowd
from annotate.models import Batch, User
from tests.factories import ModelConfigFactory, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_leaving_the_study_names_why_the_item_ended(browser, live_server, no_dispatch):
    batch = make_batch(models=[ModelConfigFactory(name="ended-note")], tasks=2)
    Batch.objects.filter(pk=batch.pk).update(items_per_participant=1)
    _, token = crowd.invite_link_create(batch=batch, label="ended")
    page = browser.new_context(locale="en-US").new_page()
    base = live_server.url
    page.goto(f"{base}/join/{token}/?PROLIFIC_PID=ENDED-NOTE")
    page.locator("#join-button").click()
    page.wait_for_url(f"{base}/")
    page.locator("#next-button").click()
    page.wait_for_url("**/annotate/sessions/*/")
    session_url = page.url
    expect(page.locator("#who")).to_contain_text(User.objects.get(external_id="ENDED-NOTE").pseudonym)
    page.goto(f"{base}{reverse('crowd-leave')}")
    page.locator("#leave-confirm").click()
    page.wait_for_url("**/study/")
    page.goto(session_url)
    expect(page.locator("#skipped-note")).to_have_text("Ended: you left the study, and this item went back to the pool.")
    expect(page.locator("#round-progress")).to_have_text("ended")
