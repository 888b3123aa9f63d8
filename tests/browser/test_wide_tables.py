"""The researchers' wide tables with 50 rows, at 1280 px and on a 390 px phone: the page never scrolls sideways (a wide
table scrolls in its own box, which a keyboard reaches), a column is never one letter a line, axe-core finds no
serious or critical violation; at 1280 px the Participants table is whole inside its card. A model with a very long
name does not push a session page sideways either."""

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate.crowd.services import invite_link_create
from annotate.models import ModelConfig, Participation, Session, User
from annotate.queue.services import assignment_next
from evaluation.interfeedback import services as outcome_services
from tests.annotate.helpers import run_pending_round
from tests.browser.conftest import login
from tests.browser.test_accessibility import assert_accessible
from tests.browser.test_small_screens import WIDTHS, fits
from tests.evaluation.builders import counted_batch, sessions_from_counts
from tests.factories import ModelConfigFactory, UserFactory, attach_image, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROWS = 50
LONG_NAME = "Qwen2.5-VL-72B-Instruct" + "_quantised_for_the_lab_cluster_with_a_very_long_run_label" * 2
LONG_NAME = LONG_NAME[:120]


@pytest.fixture
def crowded():
    """A batch with 50 invited participants (each with a Prolific id, 24 characters) who did a session each, so the
    Participants, Annotator quality, sessions, report and people pages each have 50 rows or more."""
    admin = UserFactory(username="tables-admin", role=User.Role.ADMIN)
    model = ModelConfigFactory(name="tables-gpt", display_name="GPT-4o", backend=ModelConfig.Backend.REPLAY)
    batch = counted_batch(model, annotator=admin, members=[admin])
    invite_link_create(batch=batch, label="Prolific pilot with a label of some length")
    started = timezone.now() - dt.timedelta(minutes=30)
    people = [UserFactory(username=f"crowd-{n:02d}", external_id=f"5f{n:022d}", crowd_batch=batch)
              for n in range(ROWS)]
    Participation.objects.bulk_create([Participation(batch=batch, user=user, started_at=started, consented_at=started)
                                       for user in people])
    sessions_from_counts(batch, model, "Visual Logic", (10, 10, 10, 10), ROWS, annotators=people)
    outcome_services.outcome_recompute(batch_id=batch.id)
    return admin, batch


def header_cells_narrower_than(page, px: int) -> list[str]:
    return page.evaluate("""px => [...document.querySelectorAll('.table-scroll thead th')]
        .filter(th => th.getBoundingClientRect().width < px).map(th => th.textContent.trim())""", px)


@pytest.mark.parametrize("width", WIDTHS)
def test_researcher_tables_with_50_rows_fit_and_pass_axe(browser, asgi_server, crowded, width):
    admin, batch = crowded
    pages = [
        ("participants", reverse("research-participants", args=[batch.id])),
        ("annotator quality", reverse("research-quality", args=[batch.id])),
        ("sessions", reverse("research-sessions", args=[batch.id])),
        ("report", reverse("research-report", args=[batch.id])),
        ("dashboard", reverse("research-dashboard", args=[batch.id])),
        ("invite links", reverse("research-invites", args=[batch.id])),
        ("people", reverse("people")),
        ("crowd people", reverse("people") + "?who=crowd"),
        ("research home", reverse("researcher-home")),
        ("models", reverse("models")),
    ]
    context = browser.new_context(**WIDTHS[width])
    page = context.new_page()
    too_wide, squeezed = [], []
    try:
        login(page, asgi_server, admin.username)
        for name, url in pages:
            page.goto(f"{asgi_server}{url}")
            page.wait_for_load_state("load")
            if not fits(page):
                too_wide.append((name, page.evaluate("document.documentElement.scrollWidth")))
            if narrow := header_cells_narrower_than(page, 60):
                squeezed.append((name, narrow))
            assert_accessible(page, f"{name} at {width}")
        page.goto(f"{asgi_server}{pages[0][1]}")
        assert page.locator("#participants-table tbody tr").count() == ROWS
    finally:
        context.close()
    assert not too_wide, f"wider than the window at {width}: {too_wide}"
    assert not squeezed, f"header cells under 60 px at {width}: {squeezed}"


def test_the_participants_table_is_whole_at_1280_and_not_a_tower_on_a_phone(browser, asgi_server, crowded):
    admin, batch = crowded
    url = f"{asgi_server}{reverse('research-participants', args=[batch.id])}"
    heights = {}
    for width in ("desktop", "phone"):
        context = browser.new_context(**WIDTHS[width])
        page = context.new_page()
        try:
            login(page, asgi_server, admin.username)
            page.goto(url)
            table = page.locator("#participants-table")
            assert table.locator("tbody tr").count() == ROWS
            heights[width] = table.locator("tbody").bounding_box()["height"]
            if width == "desktop":
                card = page.locator("section.card", has=table).bounding_box()
                box = page.locator(".table-scroll", has=table).bounding_box()
                outside = page.evaluate("""right => [...document.querySelectorAll('#participants-table thead th')]
                    .filter(th => th.getBoundingClientRect().right > right + 0.5).map(th => th.textContent.trim())""",
                                        card["x"] + card["width"])
                assert not outside, f"columns past the card's right edge at 1280 px: {outside}"
                assert page.evaluate("e => e.scrollWidth <= e.clientWidth",
                                     page.locator(".table-scroll", has=table).element_handle())
                reason = page.locator("#participants-table input[name=reason]").first.bounding_box()
                assert reason["x"] >= box["x"] and reason["x"] + reason["width"] <= box["x"] + box["width"]
                assert reason["width"] >= 140, reason  # the placeholder "reason (needed to reject)" readable whole
            else:
                assert fits(page)
                # the box scrolls (a keyboard reaches it: it takes the focus), the first column stays in view
                region = page.locator(".table-scroll", has=table)
                region.focus()
                page.keyboard.press("ArrowRight")
                page.keyboard.press("End")
                # Chromium animates a keyboard scroll: wait for it rather than read it at once.
                page.wait_for_function("e => e.scrollLeft > 0", arg=region.element_handle(), timeout=5_000)
                first = table.locator("tbody tr th").first.bounding_box()
                assert first["x"] >= region.bounding_box()["x"] - 0.5
        finally:
            context.close()
    assert heights["phone"] < 4 * heights["desktop"], heights


@pytest.mark.parametrize("width", WIDTHS)
def test_a_long_model_name_does_not_push_a_session_page_sideways(browser, live_server, width, no_dispatch):
    annotator = UserFactory(username=f"long-name-{width}")
    model = ModelConfigFactory(name=f"long-{width}", display_name=LONG_NAME)
    batch = make_batch(models=[model])
    attach_image(batch.tasks.get())
    session = assignment_next(annotator=annotator, batch=batch).session
    run_pending_round(session)
    context = browser.new_context(**WIDTHS[width])
    page = context.new_page()
    try:
        login(page, live_server.url, annotator.username)
        page.goto(f"{live_server.url}/annotate/sessions/{session.id}/")
        page.locator(".who.model").first.wait_for()
        assert LONG_NAME in page.locator(".who.model").first.inner_text()
        assert fits(page), page.evaluate("document.documentElement.scrollWidth")
        Session.objects.filter(pk=session.pk).update(status=Session.Status.COMPLETED, corrected_round=None)
        researcher = UserFactory(username=f"long-name-researcher-{width}", role=User.Role.ADMIN)
        batch.members.add(researcher)
        page.context.clear_cookies()
        login(page, live_server.url, researcher.username)
        page.goto(f"{live_server.url}{reverse('research-session', args=[batch.id, session.id])}")
        assert LONG_NAME in page.content()
        assert fits(page), page.evaluate("document.documentElement.scrollWidth")
    finally:
        context.close()
