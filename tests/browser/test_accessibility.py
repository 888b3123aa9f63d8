"""axe-core (shipped inside axe-playwright-python: no CDN) on every page an annotator, researcher or admin uses:
zero serious or critical violations, the session page checked in every state it can be in."""

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.urls import reverse
from playwright.sync_api import expect

from annotate.assignments import assignment_skip
from annotate.crowd.services import invite_link_create
from annotate.imports.batches import batch_import
from annotate.models import Job, Round, Session, User
from annotate.queue.services import assignment_next
from tests.annotate.helpers import run_pending_round
from tests.annotate.rating.fire.fire_data import write_images_dir, write_jsonl
from tests.browser.conftest import login
from tests.factories import ModelConfigFactory, UserFactory, attach_image, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Axe()
BLOCKING = {"serious", "critical"}


def assert_accessible(page, what: str) -> None:
    results = AXE.run(page)
    found = [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in results.response["violations"] if v["impact"] in BLOCKING
    ]
    assert not found, f"{what}: " + "; ".join(found)


def session_in(state: str, annotator, batch) -> Session:
    session = assignment_next(annotator=annotator, batch=batch).session
    if state == "generating":
        return session
    run_pending_round(session)
    if state == "failed":
        Round.objects.filter(session=session).update(generation_status=Round.Generation.FAILED,
                                                      error="The model server did not answer.")
        Session.objects.filter(pk=session.pk).update(status=Session.Status.FAILED)
    elif state == "completed":
        Session.objects.filter(pk=session.pk).update(status=Session.Status.COMPLETED, corrected_round=None)
    elif state == "skipped":
        assignment_skip(assignment=session.assignment, reason="The image does not load")
    elif state == "expired":
        Session.objects.filter(pk=session.pk).update(status=Session.Status.ABANDONED)
    return session


@pytest.mark.parametrize("state", ["generating", "awaiting_feedback", "awaiting_verdict", "failed", "completed",
                                   "skipped", "expired", "leak_warning", "shortcuts_open", "zoom_open"])
def test_session_page_in_every_state(page, live_server, state, no_dispatch):
    # no_dispatch: rounds run here, never on a worker a previous test left running, which could answer after the
    # state was set and move the session on (seen: "expired" shown as awaiting feedback)
    annotator = UserFactory(username=f"a11y-{state}")
    manual = {"answer_type": "manual", "ground_truth": "A rising line"} if state == "awaiting_verdict" else {}
    batch = make_batch(models=[ModelConfigFactory(name=f"a11y-{state}")], **manual)
    attach_image(batch.tasks.get())
    session = session_in(state, annotator, batch)
    login(page, live_server.url, annotator.username)
    page.goto(f"{live_server.url}/annotate/sessions/{session.id}/")
    expect(page.locator("#task-images img")).to_be_visible()
    if state == "leak_warning":
        page.fill("#feedback-input", "The answer is 12.")
        page.press("#feedback-input", "Control+Enter")
        expect(page.locator("#leak-warning")).to_be_visible()
    elif state in ("skipped", "expired"):
        expect(page.locator("#skipped-note")).to_have_text(re.compile("^Skipped" if state == "skipped" else "^Expired"))
    elif state == "shortcuts_open":
        expect(page.locator("#feedback-input")).to_be_focused()
        page.keyboard.press("Escape")
        page.keyboard.press("?")
        expect(page.locator("#shortcuts")).to_be_visible()
    elif state == "zoom_open":
        page.locator(".image-button").first.focus()
        page.keyboard.press("Enter")
        expect(page.locator("#image-zoom")).to_be_visible()
        page.keyboard.press("+")
    assert_accessible(page, f"session page ({state})")


def test_login_home_and_fire_pages(page, live_server, fire_batch):
    page.goto(f"{live_server.url}/login/")
    assert_accessible(page, "login page")
    annotator = UserFactory(username="a11y-fire")
    conversation = assignment_next(annotator=annotator, batch=fire_batch).work_item.conversation
    login(page, live_server.url, annotator.username)
    page.goto(f"{live_server.url}/?annotate=1")
    assert_accessible(page, "annotator home")
    page.goto(f"{live_server.url}{reverse('fire-rate', args=[conversation.id])}")
    expect(page.locator("#chat")).to_be_visible()
    assert_accessible(page, "FIRE rating page")
    page.keyboard.press("?")
    expect(page.locator("#shortcuts")).to_be_visible()
    assert_accessible(page, "FIRE rating page, shortcuts list open")

    from tests.evaluation.fire.test_fire_reports import rate_all

    rate_all([UserFactory(username=f"rater{i}") for i in range(1, 4)])
    researcher = UserFactory(username="a11y-fire-rita", role=User.Role.RESEARCHER)
    fire_batch.members.add(researcher)
    page.context.clear_cookies()
    login(page, live_server.url, researcher.username)
    page.goto(f"{live_server.url}{reverse('research-report', args=[fire_batch.id])}")
    expect(page.locator("#fire-table-a1-split-table")).to_be_visible()
    assert_accessible(page, "FIRE report page")


def test_preference_page(page, live_server, tmp_path):
    records = [{"id": "p1", "image": "bars_01.png", "question": "What does the chart show?",
                "responses": ["Three bars.", "A pie chart."], "source": "mm-rlhf", "split": "dev"}]
    report = batch_import(path=write_jsonl(tmp_path / "pref.jsonl", records), name="pref-a11y", kind="preference",
                          settings={"overlap": 1}, options={"images": str(write_images_dir(tmp_path / "images"))})
    assert report.status == "imported", report.render()
    annotator = UserFactory(username="a11y-pref")
    conversation = assignment_next(annotator=annotator).work_item.conversation
    login(page, live_server.url, annotator.username)
    page.goto(f"{live_server.url}{reverse('fire-rate', args=[conversation.id])}")
    expect(page.locator("#chat")).to_be_visible()
    assert_accessible(page, "preference page")
    page.keyboard.press("?")
    expect(page.locator("#shortcuts")).to_be_visible()
    assert_accessible(page, "preference page, shortcuts list open")


def test_research_and_import_pages(page, live_server):
    admin = UserFactory(username="a11y-admin", role=User.Role.ADMIN)
    batch = make_batch(models=[ModelConfigFactory(name="a11y-report")], members=[admin])
    invite_link_create(batch=batch, label="a11y")  # the links table, not only its empty state
    bundle_job = Job.objects.create(kind=Job.Kind.EXPORT, batch=batch, created_by=admin, params={"export": "bundle"})
    login(page, live_server.url, admin.username)
    for name, url in [("report", reverse("research-report", args=[batch.id])),
                      ("study bundle job", reverse("research-export-job", args=[batch.id, bundle_job.id])),
                      ("sessions list", reverse("research-sessions", args=[batch.id])),
                      ("quality", reverse("research-quality", args=[batch.id])),
                      ("invite links", reverse("research-invites", args=[batch.id])),
                      ("research home", reverse("researcher-home")),
                      ("import form", reverse("import-new"))]:
        page.goto(f"{live_server.url}{url}")
        assert_accessible(page, name)


def test_session_page_fits_a_phone(browser, live_server):
    """At a phone's width the page has no sideways scroll and the feedback box and Send button are on screen."""
    annotator = UserFactory(username="a11y-phone")
    batch = make_batch(models=[ModelConfigFactory(name="a11y-phone")])
    attach_image(batch.tasks.get())
    session = session_in("awaiting_feedback", annotator, batch)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        login(page, live_server.url, annotator.username)
        page.goto(f"{live_server.url}/annotate/sessions/{session.id}/")
        expect(page.locator("#feedback-input")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
        send = page.locator("#feedback-submit").bounding_box()
        assert send["width"] >= 300  # full width: an easy target for a thumb
        assert_accessible(page, "session page on a phone")
    finally:
        context.close()
