"""A Prolific participant in the browser, on the real server with a real worker: they join by the study's link
(with Prolific's parameters), see their own share (2 items, in a batch of 12 pairs), do it by keyboard, and the
moment the share is done the next-item button gives them the completion code and the link back to Prolific."""

import pytest
from playwright.sync_api import expect

from annotate.crowd import services as crowd
from annotate.models import Assignment, Batch, User
from tests.browser.conftest import answer_until_done
from tests.factories import ModelConfigFactory, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CODE = "C0DE-PROLIFIC-2"
PID = "5f1d2c3b4a5e6f7a8b9c0d1f"


def test_a_prolific_participant_joins_does_the_share_and_sees_the_code_at_once(browser, asgi_server,
                                                                                 celery_worker_process):
    models = [ModelConfigFactory(name=f"prolific-{n}", backend_settings={"chunk_delay": 0.005}) for n in "ab"]
    batch = make_batch(models=models, tasks=6, overlap=2)
    crowd.batch_set_completion_code(batch=batch, code=CODE)
    link, token = crowd.invite_link_create(batch=batch, label="prolific pilot", items_per_participant=2)
    join = f"{asgi_server}/join/{token}/?PROLIFIC_PID={PID}&STUDY_ID=study-7&SESSION_ID=session-9"

    page = browser.new_context().new_page()
    page.set_default_timeout(30_000)
    page.goto(join)
    page.locator("#main button[type=submit]").first.click()
    page.wait_for_url(f"{asgi_server}/")
    expect(page.locator("#progress")).to_contain_text("Remaining: 2")  # their share, not the batch's 6 tasks
    expect(page.locator("#share-progress")).to_have_text("Your share: 0 of 2 items done.")

    page.click("#next-button")
    page.wait_for_url("**/annotate/sessions/*/")
    expect(page.locator("#session-progress")).to_contain_text("Item 1 of 2 in your share")
    answer_until_done(page)
    expect(page.locator("#next-button")).to_contain_text("Next item")
    page.keyboard.press("n")
    page.wait_for_url(lambda url, seen=page.url: url != seen and "/annotate/sessions/" in url)
    expect(page.locator("#session-progress")).to_contain_text("Item 2 of 2 in your share")
    answer_until_done(page)
    expect(page.locator("#next-button")).to_contain_text("Finish: your completion code")
    page.keyboard.press("n")

    page.wait_for_url(f"{asgi_server}/done/")  # at once: no menu link to look for
    expect(page.locator("#completion-code")).to_have_text(CODE)
    back = page.get_by_role("link", name="Return to Prolific")
    expect(back).to_have_attribute("href", f"https://app.prolific.com/submissions/complete?cc={CODE}")
    participant = User.objects.get(external_id=PID)
    assert participant.crowd_batch_id == batch.id and participant.invite_link_id == link.id
    assert Assignment.objects.filter(annotator=participant, status="completed").count() == 2
    assert not Assignment.objects.filter(annotator=participant, status="active").exists()
    assert Batch.objects.get(pk=batch.id).items_per_participant == 2
    page.context.close()
