"""An annotator skips a FIRE conversation with the keyboard only: an empty reason is refused with a clear error,
then Enter in the reason skips it through the API and the next conversation opens."""

import pytest
from playwright.sync_api import expect

from annotate.imports.batches import import_fire
from annotate.models import Assignment
from tests.annotate.rating.fire.fire_data import sample_records, write_images_dir, write_json
from tests.browser.conftest import login_by_keyboard, start_next_item_by_keyboard, tab_to

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_skip_with_the_keyboard_then_the_next_item(page, annotator, live_server, tmp_path):
    path = write_json(tmp_path / "fire.json", sample_records())
    report = import_fire(path, name="fire-skip-browser", images=write_images_dir(tmp_path / "images"), overlap=1)
    assert report.status == "imported", report.render()

    login_by_keyboard(page, live_server.url, annotator.username)  # lands on the annotator's home
    start_next_item_by_keyboard(page)  # Tab to "Start next item", Enter → the rating page
    first_url = page.url

    tab_to(page, "skip-summary", limit=80)  # past every rating and "Save scores and next"
    page.keyboard.press("Enter")  # opens the panel; the focus goes to the reason
    expect(page.locator("#skip-reason")).to_be_focused()
    page.keyboard.press("Enter")  # no reason yet
    error = page.locator("#skip-error")
    error.wait_for(state="visible")
    assert "Say why you skip this conversation" in error.inner_text()
    assert page.locator("#skip-reason").get_attribute("aria-invalid") == "true"
    assert page.url == first_url  # refused in the page, nothing posted
    assert Assignment.objects.get(annotator=annotator).status == Assignment.Status.ACTIVE

    page.keyboard.type("The image does not load")
    assert error.is_hidden()
    with page.expect_response(lambda r: r.url.endswith("/skip/") and "/api/conversations/" in r.url) as skip:
        page.keyboard.press("Enter")
    assert skip.value.status == 204
    page.wait_for_url(lambda url: url != first_url and "/annotate/conversations/" in url)

    skipped, current = Assignment.objects.filter(annotator=annotator).order_by("created_at")
    assert (skipped.status, skipped.skip_reason) == (Assignment.Status.SKIPPED, "The image does not load")
    assert current.status == Assignment.Status.ACTIVE
    assert page.url.endswith(f"/annotate/conversations/{current.work_item.conversation_id}/")
