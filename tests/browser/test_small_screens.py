"""Every page a researcher, an admin and an annotator can reach, at 1280 px and on a 390 px phone: no sideways
scroll on the phone, and axe-core (0 serious or critical violations) on the Invites, dashboard and bench pages, the
report of each kind of study and the session page once finished."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotate.crowd.services import invite_link_create
from annotate.imports.batches import batch_import
from annotate.models import BenchRun, ModelConfig, Session, User
from annotate.queue.services import assignment_next
from tests.annotate.helpers import run_pending_round
from tests.annotate.rating.fire.fire_data import write_images_dir, write_jsonl
from tests.browser.conftest import login
from tests.browser.test_accessibility import assert_accessible
from tests.evaluation.builders import counted_batch
from tests.factories import ModelConfigFactory, UserFactory, attach_image, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"desktop": {"viewport": {"width": 1280, "height": 900}},
          "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}}


def fits(page) -> bool:
    return page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")


@pytest.fixture
def studies(fire_batch, tmp_path):
    """An admin who is a member of one batch of each kind, with something in each report."""
    admin = UserFactory(username="walker", role=User.Role.ADMIN)
    model = ModelConfigFactory(name="walk-gpt", display_name="GPT-4o", backend=ModelConfig.Backend.REPLAY)
    interfeedback = counted_batch(model, annotator=admin, members=[admin])
    invite_link_create(batch=interfeedback, label="Prolific pilot with a label of some length")
    fire_batch.members.add(admin)
    records = [{"id": "p1", "image": "bars_01.png", "question": "What does the chart show?",
                "responses": ["Three bars.", "A pie chart."], "source": "mm-rlhf", "split": "dev"}]
    report = batch_import(path=write_jsonl(tmp_path / "pref.jsonl", records), name="pref-walk", kind="preference",
                          settings={"overlap": 1}, options={"images": str(write_images_dir(tmp_path / "images"))})
    assert report.status == "imported", report.render()
    preference = interfeedback.__class__.objects.get(name="pref-walk")
    preference.members.add(admin)
    run = BenchRun.objects.create(batch=interfeedback, feedback_kinds=["detail"], answers_key="walk")
    run.receivers.set([model])
    run.providers.set([ModelConfigFactory(name="walk-provider")])
    return admin, interfeedback, fire_batch, preference, run


CHECKED = {"invite links", "dashboard", "bench runs", "bench run", "report (InterFeedback)", "report (FIRE)",
           "report (preference)"}


@pytest.mark.parametrize("width", WIDTHS)
def test_researcher_pages_fit_a_phone_and_pass_axe(browser, asgi_server, studies, width):
    admin, interfeedback, fire, preference, run = studies
    pages = [
        ("research home", reverse("researcher-home")),
        ("report (InterFeedback)", reverse("research-report", args=[interfeedback.id])),
        ("report (FIRE)", reverse("research-report", args=[fire.id])),
        ("report (preference)", reverse("research-report", args=[preference.id])),
        ("preference report", reverse("research-preferences", args=[preference.id])),
        ("invite links", reverse("research-invites", args=[interfeedback.id])),
        ("dashboard", reverse("research-dashboard", args=[interfeedback.id])),
        ("bench runs", reverse("bench-runs-page")),
        ("bench run", reverse("bench-run-page", args=[run.id])),
        ("sessions", reverse("research-sessions", args=[interfeedback.id])),
        ("quality", reverse("research-quality", args=[interfeedback.id])),
        ("participants", reverse("research-participants", args=[interfeedback.id])),
        ("study settings", reverse("research-study", args=[interfeedback.id])),
        ("models", reverse("models")),
        ("people", reverse("people")),
        ("import", reverse("import-new")),
        ("API token", reverse("api-token-page")),
        ("annotator home", "/?annotate=1"),
    ]
    context = browser.new_context(**WIDTHS[width])
    page = context.new_page()
    too_wide = []
    try:
        login(page, asgi_server, admin.username)
        for name, url in pages:
            page.goto(f"{asgi_server}{url}")
            page.wait_for_load_state("load")
            if width == "phone" and not fits(page):
                too_wide.append((name, page.evaluate("document.scrollingElement.scrollWidth")))
            if name in CHECKED:
                assert_accessible(page, f"{name} at {width}")
        if width == "phone":  # the menu open is a state of every page
            page.locator("#menu-button").click()
            expect(page.locator(".menu-items")).to_be_visible()
            assert_accessible(page, "the menu open on a phone")
    finally:
        context.close()
    assert not too_wide, f"wider than a 390 px phone: {too_wide}"


@pytest.mark.parametrize("width", WIDTHS)
def test_a_finished_session_fits_and_passes_axe(browser, live_server, width, no_dispatch):
    annotator = UserFactory(username=f"finisher-{width}")
    batch = make_batch(models=[ModelConfigFactory(name=f"finish-{width}")])
    attach_image(batch.tasks.get())
    session = assignment_next(annotator=annotator, batch=batch).session
    run_pending_round(session)
    Session.objects.filter(pk=session.pk).update(status=Session.Status.COMPLETED, corrected_round=None)
    context = browser.new_context(**WIDTHS[width])
    page = context.new_page()
    try:
        login(page, live_server.url, annotator.username)
        page.goto(f"{live_server.url}/annotate/sessions/{session.id}/")
        expect(page.locator("#done-panel")).to_be_visible()
        assert fits(page)
        assert_accessible(page, f"finished session at {width}")
    finally:
        context.close()


def test_an_annotators_pages_fit_a_phone(browser, live_server, fire_batch, no_dispatch):
    annotator = UserFactory(username="phone-annotator")
    batch = make_batch(models=[ModelConfigFactory(name="phone-walk")])
    attach_image(batch.tasks.get())
    session = assignment_next(annotator=annotator, batch=batch).session
    run_pending_round(session)
    rater = UserFactory(username="phone-rater")
    conversation = assignment_next(annotator=rater, batch=fire_batch).work_item.conversation
    context = browser.new_context(**WIDTHS["phone"])
    page = context.new_page()
    too_wide = []
    try:
        page.goto(f"{live_server.url}/login/")
        if not fits(page):
            too_wide.append(("login", page.evaluate("document.scrollingElement.scrollWidth")))
        for user, pages in ((annotator, [("home", "/?annotate=1"), ("session", f"/annotate/sessions/{session.id}/"),
                                         ("API token", reverse("api-token-page"))]),
                            (rater, [("FIRE rating", reverse("fire-rate", args=[conversation.id]))])):
            page.context.clear_cookies()
            login(page, live_server.url, user.username)
            for name, url in pages:
                page.goto(f"{live_server.url}{url}")
                page.wait_for_load_state("load")
                if not fits(page):
                    too_wide.append((name, page.evaluate("document.scrollingElement.scrollWidth")))
    finally:
        context.close()
    assert not too_wide, f"wider than a 390 px phone: {too_wide}"
