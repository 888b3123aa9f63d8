"""Reloads and double submits in a real browser: nothing typed is lost, nothing is sent twice."""

import re

import pytest
from playwright.sync_api import expect

from annotate.models import Round, Session
from tests.browser.conftest import login
from tests.factories import ModelConfigFactory, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_first_session(page, base_url, annotator, chunk_delay):
    model = ModelConfigFactory(backend_settings={"chunk_delay": chunk_delay})
    make_batch(models=[model])
    login(page, base_url, annotator.username)
    page.goto(f"{base_url}/?annotate=1")
    page.click("#next-button")
    page.wait_for_url("**/annotate/sessions/*/")
    return Session.objects.get(annotator=annotator)


def test_reload_mid_generation_and_mid_typing_keeps_everything(page, annotator, asgi_server, celery_worker_process):
    session = open_first_session(page, asgi_server, annotator, chunk_delay=0.2)
    answer = page.locator('li[data-round="0"] .answer-text')
    expect(page.locator('li[data-round="0"] .answer-text')).to_have_text(re.compile(r".{11,}", re.S))
    page.reload()  # the model is still answering
    # The snapshot brings back what was streamed so far, then the stream carries on to the end.
    page.wait_for_selector('li[data-round="0"] .verdict.wrong', timeout=30_000)
    final = answer.inner_text()
    assert "Answer:" in final
    assert final.strip() == session.rounds.get().answer_text.strip()

    page.fill("#feedback-input", "The answer misses the second row of the picture")
    page.wait_for_selector("#draft-status:has-text('Draft saved')")
    page.reload()  # mid-typing
    page.wait_for_selector("#feedback-form:not([hidden])")
    assert page.input_value("#feedback-input") == "The answer misses the second row of the picture"
    # A second device (another browser context of the same user) finds the same draft.
    other = page.context.browser.new_context()
    second = other.new_page()
    login(second, asgi_server, annotator.username)
    second.goto(f"{asgi_server}/annotate/sessions/{session.id}/")
    second.wait_for_selector("#feedback-form:not([hidden])")
    assert second.input_value("#feedback-input") == "The answer misses the second row of the picture"
    other.close()


def test_double_submit_makes_one_round(page, annotator, asgi_server, celery_worker_process):
    session = open_first_session(page, asgi_server, annotator, chunk_delay=0)
    page.wait_for_selector('li[data-round="0"] .verdict.wrong', timeout=30_000)
    page.fill("#feedback-input", "Look again at the picture.")
    page.dblclick("#feedback-submit")  # a double click
    page.wait_for_selector('li[data-round="1"]')
    # A client retry of the same action (same request id, e.g. after a timeout) sent twice at once.
    page.wait_for_selector('li[data-round="1"] .verdict.wrong', timeout=30_000)
    page.fill("#feedback-input", "Still wrong, count again.")
    statuses = page.evaluate(
        """async () => {
            const csrf = document.querySelector('meta[name="csrf-token"]').content;
            const send = () => fetch(location.pathname.replace('/annotate/sessions/', '/api/sessions/') + 'feedback/', {
                method: 'POST', credentials: 'same-origin',
                headers: {'Content-Type': 'application/json', 'X-CSRFToken': csrf},
                body: JSON.stringify({feedback: 'Still wrong, count again.', client_request_id: 'retry-once'})});
            const replies = await Promise.all([send(), send()]);
            return replies.map(r => r.status);
        }"""
    )
    assert statuses == [201, 201]
    assert list(session.rounds.order_by("index").values_list("index", flat=True)) == [0, 1, 2]
    assert Round.objects.filter(session=session, client_request_id="retry-once").count() == 1
