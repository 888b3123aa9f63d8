"""The "your feedback states an answer" warning in a real browser: it lists what was detected in the typed text,
editing is the default, and sending anyway stays possible."""

import pytest

from annotate.models import LeakWarning, Round
from tests.browser.conftest import login
from tests.factories import ModelConfigFactory, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_warning_lists_what_was_detected_and_defaults_to_editing(page, annotator, asgi_server,
                                                                 celery_worker_process):
    make_batch(models=[ModelConfigFactory(name="leak-sim", backend_settings={"chunk_delay": 0})])
    login(page, asgi_server, annotator.username)
    page.goto(f"{asgi_server}/?annotate=1")
    page.click("#next-button")
    page.wait_for_url("**/annotate/sessions/*/")
    page.wait_for_selector('li[data-round="0"] .verdict.wrong', timeout=30_000)

    page.fill("#feedback-input", "Is it 7390 or 7392?")
    page.click("#feedback-submit")
    page.wait_for_selector("#leak-warning:not([hidden])")
    assert page.locator("#leak-detected li").all_inner_texts() == ["the number 7390", "the number 7392"]
    assert page.evaluate("document.activeElement.id") == "leak-edit"  # Enter edits, it does not send
    page.keyboard.press("Enter")
    assert page.locator("#leak-warning").is_hidden()
    assert page.evaluate("document.activeElement.id") == "feedback-input"
    assert page.input_value("#feedback-input") == "Is it 7390 or 7392?"  # nothing typed is lost

    page.click("#feedback-submit")
    page.click("#leak-confirm")
    page.wait_for_selector('li[data-round="1"]')
    sent = Round.objects.get(index=1, session__annotator=annotator)
    assert sent.leak_flagged and sent.stated_answer == "the number 7390; the number 7392"
    assert LeakWarning.objects.filter(annotator=annotator).count() == 2  # two warnings shown, one sent anyway
