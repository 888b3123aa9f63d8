"""Typing while the model still answers: the keys are kept and land in the feedback box when it appears (with the
focus); letter shortcuts wait, so an early S, C, W or Ctrl+Enter never skips, judges or sends.

Nothing is sent to a worker (send_task is replaced, so a worker left by another test cannot answer either): the
round stays "generating" until the test generates it in-process, and the page (polling, as when its WebSocket is
down) sees the answer then. Nothing depends on timing."""

import pytest
from playwright.sync_api import expect

from annotate.models import Assignment, Round, Session
from tests.annotate.helpers import run_pending_round
from tests.browser.conftest import login_by_keyboard, start_next_item_by_keyboard
from tests.factories import ModelConfigFactory, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

@pytest.fixture(autouse=True)
def _no_worker_answers(monkeypatch):
    """Rounds are queued but never delivered: the test decides when the model has answered."""
    monkeypatch.setattr("annotate.queue_contract.send_task", lambda name, args, **options: None)


TYPED = "s Count the rows first, carefully."  # S, C, W, R, N and F are all shortcuts once the model has answered


def start_generating_session(page, live_server, annotator) -> Session:
    login_by_keyboard(page, live_server.url, annotator.username)
    start_next_item_by_keyboard(page, "sessions")
    expect(page.locator("#status-line")).to_contain_text("The model is answering")
    session = Session.objects.get(annotator=annotator)
    assert session.status == Session.Status.GENERATING
    return session


def test_keys_typed_while_the_model_answers_go_into_the_feedback_box(page, annotator, live_server):
    make_batch(models=[ModelConfigFactory(name="typeahead-sim")], question="How many dots are there?")
    session = start_generating_session(page, live_server, annotator)

    page.keyboard.type(TYPED + "x")
    page.keyboard.press("Backspace")  # takes back the last key kept
    page.keyboard.press("Control+Enter")  # nothing to send yet
    expect(page.locator("#typed-ahead-text")).to_have_text(TYPED)
    expect(page.locator("#skip-panel")).not_to_have_attribute("open", "")
    page.keyboard.press("?")  # still lists the shortcuts, and is not typed
    expect(page.locator("#shortcuts")).to_be_visible()
    expect(page.locator("#shortcuts")).to_contain_text("Typing while the model answers")
    page.keyboard.press("Escape")
    expect(page.locator("#shortcuts")).to_be_hidden()
    expect(page.locator("#typed-ahead-text")).to_have_text(TYPED)
    assert Assignment.objects.get(annotator=annotator).status == Assignment.Status.ACTIVE  # not skipped
    assert Round.objects.filter(session=session).count() == 1  # nothing sent

    run_pending_round(session)  # the first answer arrives: the box appears, takes the focus, holds what was typed
    box = page.locator("#feedback-input")
    expect(box).to_be_focused()
    expect(box).to_have_value(TYPED)
    expect(page.locator("#typed-ahead")).to_be_hidden()
    page.keyboard.type(" Twice.")  # the caret is at the end
    expect(box).to_have_value(TYPED + " Twice.")
    assert Round.objects.filter(session=session).count() == 1

    page.keyboard.press("Control+Enter")  # now, and only now, it is sent
    expect(page.locator("#status-line")).to_contain_text("The model is answering")
    sent = Round.objects.get(session=session, index=1)
    assert sent.feedback_text == TYPED + " Twice."


def test_keys_typed_early_never_choose_a_verdict(page, annotator, live_server):
    make_batch(models=[ModelConfigFactory(name="typeahead-manual")], answer_type="manual",
               question="Describe the chart.", ground_truth="A rising line")
    session = start_generating_session(page, live_server, annotator)

    page.keyboard.type("cw")
    expect(page.locator("#typed-ahead-text")).to_have_text("cw")
    run_pending_round(session)
    expect(page.locator("#verdict-question")).to_be_focused()
    assert session.rounds.get(index=0).final_verdict is None  # C and W were text, not verdicts
    expect(page.locator("#typed-ahead-text")).to_have_text("cw")  # still kept for the feedback box

    page.keyboard.press("w")  # a verdict, typed after the question appeared
    box = page.locator("#feedback-input")
    expect(box).to_be_focused()
    expect(box).to_have_value("cw")
    assert session.rounds.get(index=0).final_verdict is False
