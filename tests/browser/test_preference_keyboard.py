"""A preference item (two candidates, three 1-5 scores and a reason each, a ranking) with the keyboard only."""

import pytest

from annotate.imports.batches import batch_import
from annotate.models import Assignment, Ranking, Rating
from tests.annotate.rating.fire.fire_data import write_images_dir, write_jsonl
from tests.browser.conftest import focused, login_by_keyboard, start_next_item_by_keyboard

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_rate_a_preference_item_with_the_keyboard_only(page, annotator, live_server, tmp_path):
    records = [{"id": "p1", "image": "bars_01.png", "question": "What does the chart show?",
                "responses": ["Three bars.", "A pie chart."], "source": "mm-rlhf", "split": "dev"}]
    report = batch_import(path=write_jsonl(tmp_path / "pref.jsonl", records), name="pref-keys", kind="preference",
                          settings={"overlap": 1}, options={"images": str(write_images_dir(tmp_path / "images"))})
    assert report.status == "imported", report.render()

    login_by_keyboard(page, live_server.url, annotator.username)  # lands on the annotator's home
    start_next_item_by_keyboard(page)  # Tab to "Start next item", Enter → the rating page

    for candidate in range(2):
        for dimension, key in (("helpfulness", "4"), ("faithfulness", "5"), ("ethics", "3")):
            assert dimension in focused(page), focused(page)
            page.keyboard.press(key)
            page.keyboard.press("Tab")
        assert focused(page).startswith("comment-"), focused(page)  # a reason is required: it is on the Tab path
        page.keyboard.type(f"Reason for candidate {candidate + 1}.")
        page.keyboard.press("Tab")
    assert focused(page) == "ranking"
    page.keyboard.type("1>2")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"{live_server.url}/")

    assert Assignment.objects.get(annotator=annotator).status == Assignment.Status.COMPLETED
    ratings = list(Rating.objects.filter(is_final=True).order_by("turn__index"))
    assert [r.comment for r in ratings] == ["Reason for candidate 1.", "Reason for candidate 2."]
    assert [(r.helpfulness, r.faithfulness, r.ethics) for r in ratings] == [(4, 5, 3), (4, 5, 3)]
    assert Ranking.objects.get(is_final=True).ranking == "1>2"
