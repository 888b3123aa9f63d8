"""The session page survives its web server dying: it reconnects by itself to the server that answers next on the
same address, keeps what the annotator typed (and saves it as the draft), and sending it works, with no reload."""

import pytest
from playwright.sync_api import expect

from annotate.models import Session
from tests.browser.conftest import login
from tests.factories import ModelConfigFactory, attach_image, make_batch
from tests.stack import RestartableWeb

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def restartable_server(django_db_setup, redis_url, stack_logs):
    server = RestartableWeb(stack_logs / "restartable-web.log")
    server.start()
    yield server
    server.stop()


def test_the_session_page_reconnects_to_a_new_server_and_keeps_the_typed_text(
    page, annotator, restartable_server, celery_worker_process
):
    model = ModelConfigFactory(name="recovering-sim", backend_settings={"chunk_delay": 0.01})
    batch = make_batch(models=[model], category="Mathematical Logic", question="How many dots are there?")
    attach_image(batch.tasks.get())
    base = restartable_server.url
    login(page, base, annotator.username)
    page.goto(f"{base}/?annotate=1")
    page.click("#next-button")
    page.wait_for_url("**/annotate/sessions/*/")
    page.wait_for_selector('li[data-round="0"] .verdict.wrong', timeout=30_000)
    expect(page.locator("#connection")).to_have_text("Live")
    url_before = page.url
    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url) if frame == page.main_frame else None)

    page.locator("#feedback-input").press_sequentially("Count the dots row by row,")
    expect(page.locator("#draft-status")).to_have_text("Draft saved")
    restartable_server.kill()
    expect(page.locator("#connection")).to_have_text("Reconnecting…")
    # Typed while no server answers: kept in the box, and saved once the page is connected again.
    page.locator("#feedback-input").press_sequentially(" then the columns.")

    restartable_server.start()
    expect(page.locator("#connection")).to_have_text("Live", timeout=15_000)
    typed = "Count the dots row by row, then the columns."
    expect(page.locator("#feedback-input")).to_have_value(typed)
    expect(page.locator("#draft-status")).to_have_text("Draft saved", timeout=10_000)
    session = Session.objects.get(annotator=annotator)
    assert session.feedback_draft == typed

    page.press("#feedback-input", "Control+Enter")
    page.wait_for_selector('li[data-round="1"] .verdict.wrong, li[data-round="1"] .verdict.correct', timeout=30_000)
    assert typed in page.locator('li[data-round="1"] .feedback-text').inner_text()
    assert page.url == url_before and navigations == [], "the page reloaded or navigated instead of reconnecting"
    assert session.rounds.filter(index=1).count() == 1


def test_the_live_dashboard_reconnects_to_a_new_server_and_takes_a_fresh_snapshot(page, researcher, restartable_server):
    model = ModelConfigFactory(name="dashboard-sim")
    batch = make_batch(models=[model], tasks=2, members=(researcher,))
    base = restartable_server.url
    login(page, base, researcher.username)
    page.goto(f"{base}/research/batches/{batch.id}/dashboard/")
    state = page.locator("#live-state")
    expect(state).to_have_text("Live: updates as annotators work.")
    generated = page.locator("#generated-at").get_attribute("datetime")
    url_before = page.url

    restartable_server.kill()
    expect(state).to_have_text("Connection lost; reconnecting…")
    restartable_server.start()
    expect(state).to_have_text("Live: updates as annotators work.", timeout=15_000)
    # The snapshot sent on connect is drawn: the page is up to date without a reload.
    expect(page.locator("#generated-at")).not_to_have_attribute("datetime", generated)
    expect(page.locator("#total-left")).to_have_text("2")
    assert page.url == url_before
