"""The annotator's session page by keyboard only: login, start, three rounds of feedback, the next item, a skip,
the shortcuts list and the image zoom, with the focus where the next action is after every answer."""

import re

import pytest
from playwright.sync_api import expect

from annotate.models import Assignment, Session
from tests.browser.conftest import login_by_keyboard, tab_to
from tests.factories import ModelConfigFactory, attach_image, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_whole_session_and_a_skip_by_keyboard(page, annotator, asgi_server, celery_worker_process):
    model = ModelConfigFactory(name="keys-sim", backend_settings={"chunk_delay": 0.01})
    batch = make_batch(models=[model], tasks=2, question="How many dots are there?")
    for task in batch.tasks.all():
        attach_image(task)
    batch.instructions = "Be **brief**: say what is wrong, never the answer."
    batch.save(update_fields=["instructions"])

    login_by_keyboard(page, asgi_server, annotator.username)
    page.goto(f"{asgi_server}/?annotate=1")
    tab_to(page, "next-button")
    page.keyboard.press("Enter")
    page.wait_for_url("**/annotate/sessions/*/")
    expect(page.locator("#session-progress")).to_contain_text("Item 1 in this batch")

    # `?` lists the shortcuts; Esc closes the list.
    expect(page.locator("#feedback-input")).to_be_focused()  # the box takes the focus after the first answer
    page.keyboard.press("Escape")  # leaves the box, so single keys work
    page.keyboard.press("?")
    expect(page.locator("#shortcuts")).to_be_visible()
    expect(page.locator("#shortcuts")).to_contain_text("Skip this item")
    page.keyboard.press("Escape")
    expect(page.locator("#shortcuts")).to_be_hidden()

    # Enter on a figure zooms it; + zooms in; Esc closes. Its alt text comes from the task.
    assert "How many dots" in page.locator("#task-images img").first.get_attribute("alt")
    page.locator(".image-button").first.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#image-zoom")).to_be_visible()
    page.keyboard.press("+")
    expect(page.locator("#zoom-image")).to_have_attribute("style", re.compile(r"scale\(1\.25\)"))
    page.keyboard.press("Escape")
    expect(page.locator("#image-zoom")).to_be_hidden()

    # The batch's instructions are open at first; closed once, they stay closed on the next items.
    expect(page.locator("#instructions strong")).to_have_text("brief")
    expect(page.locator("#instructions")).to_have_attribute("open", "")
    page.locator("#instructions summary").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#instructions")).not_to_have_attribute("open", "")

    page.keyboard.press("f")  # back to the feedback box
    for index in (1, 2, 3):
        expect(page.locator("#feedback-input")).to_be_focused()
        expect(page.locator("#round-progress")).to_have_text(f"round {index} of 3")
        expect(page.locator("#reveal-help")).to_be_visible() if index == 3 else expect(
            page.locator("#reveal-help")).to_be_hidden()
        page.keyboard.type(f"Count the dots row by row, {['slowly', 'carefully', 'once more'][index - 1]}.")
        page.keyboard.press("Control+Enter")
        # One status line while the model answers; no second "answering" label in the round itself.
        expect(page.locator(f'li[data-round="{index}"] .verdict')).to_have_class(re.compile("correct|wrong"))
    expect(page.locator("#done-panel")).to_be_visible()
    expect(page.locator("#next-button")).to_be_focused()
    expect(page.locator("#status-line")).to_have_text("")
    first = Session.objects.get(annotator=annotator)
    assert first.status == Session.Status.COMPLETED and first.rounds.count() == 4

    page.keyboard.press("n")  # the next item
    page.wait_for_url(lambda url: f"/sessions/{first.id}/" not in url)
    expect(page.locator("#feedback-input")).to_be_focused()
    expect(page.locator("#session-progress")).to_contain_text("Item 2 in this batch")
    expect(page.locator("#instructions")).not_to_have_attribute("open", "")
    page.keyboard.press("Escape")
    page.keyboard.press("s")  # skip asks why, from a short list
    expect(page.locator("#skip-first-reason")).to_be_focused()
    page.keyboard.press("Enter")
    page.wait_for_url("**/?annotate=1")
    expect(page.locator("table")).to_contain_text("Skipped")
    skipped = Assignment.objects.get(annotator=annotator, status=Assignment.Status.SKIPPED)
    assert skipped.skip_reason == "The image does not load or cannot be read"


def test_neither_verdict_is_the_default_and_keys_choose(page, annotator, asgi_server, celery_worker_process):
    model = ModelConfigFactory(name="verdict-sim", backend_settings={"chunk_delay": 0.01})
    make_batch(models=[model], answer_type="manual", question="Describe the chart.", ground_truth="A rising line")
    login_by_keyboard(page, asgi_server, annotator.username)
    page.goto(f"{asgi_server}/?annotate=1")
    tab_to(page, "next-button")
    page.keyboard.press("Enter")
    page.wait_for_url("**/annotate/sessions/*/")
    expect(page.locator("#verdict-panel")).to_be_visible()
    expect(page.locator("#verdict-question")).to_be_focused()
    for button in ("#verdict-correct", "#verdict-wrong"):
        assert "primary" not in (page.locator(button).get_attribute("class") or "")
    page.keyboard.press("w")
    expect(page.locator("#feedback-input")).to_be_focused()
    assert Session.objects.get(annotator=annotator).rounds.get(index=0).final_verdict is False
