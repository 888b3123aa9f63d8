"""An annotator rates a whole FIRE conversation in a real browser with the keyboard only.

The page needs no websocket, so pytest-django's live server is enough.
"""

import re

import pytest
from playwright.sync_api import expect

from annotate.imports.batches import import_fire
from annotate.models import Assignment, Rating
from tests.annotate.rating.fire.fire_data import record, write_images_dir, write_json
from tests.browser.conftest import focused, login_by_keyboard, start_next_item_by_keyboard

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_rate_a_conversation_with_the_keyboard_only(page, annotator, live_server, tmp_path):
    conversation = record("bars_01.png", "Which bar is the tallest?", "green", 3, source="chartqa", split="fire_test")
    path = write_json(tmp_path / "fire.json", [conversation])
    report = import_fire(path, name="fire-browser", images=write_images_dir(tmp_path / "images"), overlap=1)
    assert report.status == "imported", report.render()

    login_by_keyboard(page, live_server.url, annotator.username)  # lands on the annotator's home
    start_next_item_by_keyboard(page)  # Tab to "Start next item", Enter → the rating page
    assert page.locator("#conv-ground-truth").inner_text() == "Ground truth: green"
    assert page.locator("#conv-image").evaluate("img => img.complete && img.naturalWidth > 0")
    assert page.locator(".turn-student .part-label").first.inner_text() == "Thought:"
    assert page.locator(".turn-teacher .part-label").first.inner_text() == "Score:"
    for criterion in ("Improvement", "Completeness", "Clarity", "Constructiveness"):
        assert page.get_by_text(criterion, exact=True).count() >= 1

    # The page starts on the first turn to rate (turn index 1, teacher feedback).
    assert focused(page).startswith("score-1-")
    page.keyboard.press("4")
    assert page.locator("#score-1-4").is_checked()
    assert focused(page) == "score-1-4"
    expect(page.locator("#draft-status")).to_have_text(re.compile(r"^Draft saved"))  # no eval: the page's CSP
    assert Rating.objects.get(turn__index=1).score == 4  # the autosaved draft
    assert not Rating.objects.get(turn__index=1).is_final

    # Ctrl+Enter with turns unscored: an error names them and the focus goes to the first missing one.
    page.keyboard.press("Control+Enter")
    error = page.locator("#form-error")
    error.wait_for(state="visible")
    assert "Missing:" in error.inner_text() and "turn 3" in error.inner_text()
    assert focused(page).startswith("score-2-")

    # Turn 2 (student response): 3, then an arrow key moves the score up to 4; a comment typed on the way.
    page.keyboard.press("3")
    page.keyboard.press("ArrowRight")
    assert page.locator("#score-2-4").is_checked()
    # A comment has its own key (M); Esc goes back to the turn's rating, and Tab never stops in comment boxes.
    page.keyboard.press("m")
    assert focused(page) == "comment-2"
    page.keyboard.type("Uses the feedback; 5 is typed as text here.")
    page.keyboard.press("Escape")
    assert focused(page) == "score-2-4"
    expected = {1: 4, 2: 4}
    for index, key in ((3, "2"), (4, "5"), (5, "1")):
        page.keyboard.press("Tab")
        assert focused(page).startswith(f"score-{index}-"), focused(page)
        page.keyboard.press(key)
        expected[index] = int(key)
    page.keyboard.press("Tab")
    assert focused(page) == "save-next"  # past the last turn: no comment box on the way

    page.keyboard.press("Control+Enter")  # Save scores and next
    page.wait_for_url(f"{live_server.url}/")  # nothing left: back home with a message
    assert "You have finished your share" in page.locator(".messages").inner_text()

    ratings = {r.turn.index: r for r in Rating.objects.select_related("turn")}
    assert {index: r.score for index, r in ratings.items()} == expected
    assert all(r.is_final for r in ratings.values())
    assert ratings[2].comment == "Uses the feedback; 5 is typed as text here."
    assert Assignment.objects.get(annotator=annotator).status == Assignment.Status.COMPLETED


def test_the_shortcuts_list_by_keyboard(page, annotator, live_server, tmp_path):
    """`?` lists every FIRE shortcut; Esc closes the list and the focus goes back to the score it left; in a comment
    box `?` is only text."""
    conversation = record("bars_01.png", "Which bar is the tallest?", "green", 3, source="chartqa", split="fire_test")
    report = import_fire(write_json(tmp_path / "fire.json", [conversation]), name="fire-shortcuts",
                         images=write_images_dir(tmp_path / "images"), overlap=1)
    assert report.status == "imported", report.render()
    login_by_keyboard(page, live_server.url, annotator.username)
    start_next_item_by_keyboard(page)
    start = focused(page)
    assert start.startswith("score-1-")

    dialog = page.locator("#shortcuts")
    expect(dialog).to_be_hidden()
    page.keyboard.press("?")
    expect(dialog).to_be_visible()
    for entry in ("Score the focused turn", "Change the focused score by one", "Write a comment on the focused turn",
                  "Leave the comment box, back to the turn's score", "Save scores and open the next item",
                  "Open the skip panel", "This list"):
        expect(dialog).to_contain_text(entry)
    page.keyboard.press("4")  # keys inside the open list score nothing
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(page.locator(f"#{start}")).to_be_focused()
    assert not page.locator("#score-1-4").is_checked()

    page.keyboard.press("m")
    expect(page.locator("#comment-1")).to_be_focused()
    page.keyboard.type("Why?")
    expect(page.locator("#comment-1")).to_have_value("Why?")
    expect(dialog).to_be_hidden()
    page.keyboard.press("Escape")  # back to the score; from there `?` opens the list again
    page.keyboard.press("?")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
