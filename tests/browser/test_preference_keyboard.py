"""A preference item with the keyboard only (three 1-5 scores and a reason per candidate, then each candidate's place
in the ranking), the one short message for what a save lacks, the warning for a ranking that contradicts the
scores, and a researcher reading every rater's judgments of the item."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotate.imports.batches import batch_import
from annotate.models import Assignment, Batch, Ranking, Rating, User
from annotate.queue.services import assignment_next
from annotate.rating.preference.services import preference_save
from tests.annotate.rating.fire.fire_data import write_images_dir, write_jsonl
from tests.browser.conftest import focused, login, login_by_keyboard, start_next_item_by_keyboard
from tests.browser.test_accessibility import assert_accessible
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORD = {"id": "p1", "image": "bars_01.png", "question": "What does the chart show?",
          "responses": ["Three bars.", "A pie chart."], "models": ["gpt-4o", "llava-1.5"], "source": "mm-rlhf",
          "split": "dev"}


def _import(tmp_path, overlap: int = 1) -> Batch:
    report = batch_import(path=write_jsonl(tmp_path / "pref.jsonl", [RECORD]), name="pref-keys", kind="preference",
                          settings={"overlap": overlap}, options={"images": str(write_images_dir(tmp_path / "images"))})
    assert report.status == "imported", report.render()
    return Batch.objects.get(name="pref-keys")


def test_rate_a_preference_item_with_the_keyboard_only(page, annotator, live_server, tmp_path):
    _import(tmp_path)
    login_by_keyboard(page, live_server.url, annotator.username)  # lands on the annotator's home
    start_next_item_by_keyboard(page)  # Tab to "Start next item", Enter → the rating page
    expect(page.locator("#ranking-text")).to_have_text("not given yet")

    # Candidate 1 is scored above candidate 2 on every dimension.
    for candidate, keys in ((1, "454"), (2, "343")):
        for dimension, key in zip(("helpfulness", "faithfulness", "ethics"), keys, strict=True):
            assert dimension in focused(page), focused(page)
            page.keyboard.press(key)
            page.keyboard.press("Tab")
        assert focused(page).startswith("comment-"), focused(page)  # a reason is required: it is on the Tab path
        page.keyboard.type(f"Reason for candidate {candidate}.")
        page.keyboard.press("Tab")

    # The ranking: each candidate's place, keys on the focused place control.
    assert focused(page).startswith("rank-"), focused(page)
    page.keyboard.press("2")  # candidate 1 second ...
    page.keyboard.press("Tab")
    page.keyboard.press("1")  # ... candidate 2 first: it contradicts the scores
    expect(page.locator("#ranking-text")).to_have_text("2 > 1")
    expect(page.locator("#ranking-warning")).to_be_visible()
    expect(page.locator("#ranking-warning")).to_contain_text("candidate 2 above candidate 1")
    page.keyboard.press("Shift+Tab")  # back to candidate 1's place: first, a tie with candidate 2
    page.keyboard.press("1")
    expect(page.locator("#ranking-text")).to_have_text("1 = 2")
    expect(page.locator("#ranking-warning")).to_be_hidden()
    page.keyboard.press("Tab")
    page.keyboard.press("2")  # candidate 2 second: 1 > 2
    expect(page.locator("#ranking-text")).to_have_text("1 > 2")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"{live_server.url}/")

    assert Assignment.objects.get(annotator=annotator).status == Assignment.Status.COMPLETED
    ratings = list(Rating.objects.filter(is_final=True).order_by("turn__index"))
    assert [r.comment for r in ratings] == ["Reason for candidate 1.", "Reason for candidate 2."]
    assert [(r.helpfulness, r.faithfulness, r.ethics) for r in ratings] == [(4, 5, 4), (3, 4, 3)]
    assert Ranking.objects.get(is_final=True).ranking == "1>2"


def test_one_short_message_names_what_a_save_lacks(page, annotator, live_server, tmp_path):
    _import(tmp_path)
    conversation = assignment_next(annotator=annotator).work_item.conversation
    login(page, live_server.url, annotator.username)
    page.goto(f"{live_server.url}{reverse('fire-rate', args=[conversation.id])}")
    for dimension in ("helpfulness", "faithfulness", "ethics"):
        page.click(f"label[for={dimension}-0-4]")  # the radios are drawn by their labels
    page.fill("#comment-0", "Right.")
    page.click("label[for=helpfulness-1-3]")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#form-error")).to_have_text(
        "Complete before saving: candidate 2 (faithfulness, ethics, reason) and the ranking.")
    expect(page.locator("#faithfulness-1-1")).to_be_focused()  # the first thing missing has the focus
    assert Assignment.objects.get(annotator=annotator).status == Assignment.Status.ACTIVE
    assert_accessible(page, "preference page, a save that lacks scores, a reason and the ranking")


def test_a_researcher_reads_every_raters_judgments(page, live_server, tmp_path):
    batch = _import(tmp_path, overlap=2)
    for name, ranking, reason in (("rater-a", "1>2", "Counts the bars."), ("rater-b", "2=1", "")):
        rater = UserFactory(username=name, pseudonym=f"ann-{name}")
        conversation = assignment_next(annotator=rater).work_item.conversation
        preference_save(annotator=rater, conversation_id=conversation.id, ranking=ranking,
                        ratings={i: {"helpfulness": 4 - i, "faithfulness": 4, "ethics": 5, "reason": reason}
                                 for i in range(2)}, client_request_id=name, final=name == "rater-a")
    researcher = UserFactory(username="pref-rita", role=User.Role.RESEARCHER)
    batch.members.add(researcher)
    login(page, live_server.url, researcher.username)
    page.goto(f"{live_server.url}{reverse('fire-rate', args=[conversation.id])}")
    expect(page.locator("#readonly-note")).to_contain_text("every rater's judgments")
    expect(page.locator("#turn-0-head")).to_contain_text("gpt-4o")  # researchers see the models, raters never
    first, second = page.locator("#judgment-1"), page.locator("#judgment-2")
    expect(first.locator("caption")).to_contain_text("ann-rater-a · ranking 1>2 · final")
    expect(first).to_contain_text("Counts the bars.")
    expect(second.locator("caption")).to_contain_text("ann-rater-b · ranking 2=1 · draft")
    expect(page.locator("#ranking-control")).to_have_count(0)
    assert_accessible(page, "preference item read by a researcher")


def test_a_preference_batchs_research_pages_are_accessible(page, live_server, tmp_path):
    """axe-core on the pages a researcher reads a preference study on: the batch report (its preference section),
    the preference report and the rater quality page."""
    from tests.evaluation.preference.study import import_study, rate, raters

    batch = import_study(tmp_path)
    rate(batch, raters())
    researcher = UserFactory(username="pref-rex", role=User.Role.RESEARCHER)
    batch.members.add(researcher)
    login(page, live_server.url, researcher.username)
    for name, url, shown in (("batch report", reverse("research-report", args=[batch.id]), "#preference-progress"),
                             ("preference report", reverse("research-preferences", args=[batch.id]), "#pairs-table"),
                             ("rater quality", reverse("research-quality", args=[batch.id]), "#quality-table")):
        page.goto(f"{live_server.url}{url}")
        expect(page.locator(shown)).to_be_visible()
        assert_accessible(page, f"preference batch, {name}")
