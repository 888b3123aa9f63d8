"""The session page in Simplified Chinese in a real browser: the server-drawn page and the strings session.js draws
from Django's JavaScript catalog (a script from our own origin: the page's CSP check stays on)."""

import pytest
from playwright.sync_api import expect

from annotate.queue.services import assignment_next
from tests.browser.conftest import login
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_chinese_users_session_page_is_chinese_in_the_script_too(page, asgi_server, no_dispatch):
    # No worker: the session stays in round 0 "generating", so the script draws its status line and progress.
    user = UserFactory(username="wang", language="zh-hans")
    model = ModelConfigFactory(name="lang-sim", backend_settings={"chunk_delay": 0})
    session = assignment_next(annotator=user, batch=make_batch(models=[model])).session

    login(page, asgi_server, user.username)
    page.goto(f"{asgi_server}/annotate/sessions/{session.id}/")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.locator("#transcript-heading")).to_have_text("对话")  # the template
    expect(page.locator("#round-progress")).to_have_text("首次回答")  # session.js, through the catalog
    expect(page.locator("#status-line")).to_contain_text("模型正在作答…")
    expect(page.locator('li[data-round="0"] h3')).to_have_text("第 0 轮——首次回答")
    expect(page.locator("#time-on-item")).to_contain_text("此条目已用时")


def test_the_chooser_switches_the_page_and_the_script(page, asgi_server, annotator, no_dispatch):
    model = ModelConfigFactory(name="lang-sim-2", backend_settings={"chunk_delay": 0})
    session = assignment_next(annotator=annotator, batch=make_batch(models=[model])).session

    login(page, asgi_server, annotator.username)
    page.goto(f"{asgi_server}/annotate/sessions/{session.id}/")
    expect(page.locator("#round-progress")).to_have_text("first answer")
    page.select_option("#language-select", "zh-hans")
    page.click("#language-submit")
    page.wait_for_url(f"**/annotate/sessions/{session.id}/")
    expect(page.locator("#round-progress")).to_have_text("首次回答")
    expect(page.locator("#language-submit")).to_have_text("切换语言")
    annotator.refresh_from_db()
    assert annotator.language == "zh-hans"


def test_a_failed_rounds_message_is_in_the_annotators_language(page, asgi_server, no_dispatch):
    # The snapshot is built by a worker in no one's language: the page translates the failure by its kind.
    from annotate.models import Round, Session
    from annotate.sessions.failures import WORKER_STOPPED_MESSAGE

    user = UserFactory(username="li", language="zh-hans")
    model = ModelConfigFactory(name="lang-sim-3", backend_settings={"chunk_delay": 0})
    session = assignment_next(annotator=user, batch=make_batch(models=[model])).session
    session.rounds.update(generation_status=Round.Generation.FAILED, error=WORKER_STOPPED_MESSAGE)
    Session.objects.filter(pk=session.pk).update(status=Session.Status.FAILED)  # what the stall reaper leaves

    login(page, asgi_server, user.username)
    page.goto(f"{asgi_server}/annotate/sessions/{session.id}/")
    expect(page.locator("#retry-message")).to_have_text("模型 worker 在回答完成前停止了。你的文字已保存；请按“重试”。")
