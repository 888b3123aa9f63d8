"""The newcomer's walk through the pages a researcher and an annotator live in (issue: invite links, the menu on a
phone, a finished session's timer, the leak warning, a FIRE report, n per cell), in a real browser on a fresh
database."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotate.crowd.selectors import invite_link_paths
from annotate.crowd.services import invite_link_create
from annotate.models import ModelConfig, Round, Session, User
from annotate.queue.services import assignment_next
from tests.annotate.helpers import run_pending_round
from tests.browser.conftest import login
from tests.evaluation.builders import counted_batch
from tests.factories import ModelConfigFactory, UserFactory, attach_image, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 900}}


def test_invite_links_are_whole_labelled_and_copied_by_their_button(browser, live_server):
    admin = UserFactory(username="newcomer-admin", role=User.Role.ADMIN)
    batch = make_batch(models=[ModelConfigFactory(name="invite-sim")], members=[admin])
    link, _ = invite_link_create(batch=batch, label="Prolific pilot")
    context = browser.new_context(**DESKTOP)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    try:
        login(page, live_server.url, admin.username)
        page.goto(f"{live_server.url}{reverse('research-invites', args=[batch.id])}")
        plain, prolific = page.locator(f"#url-{link.id}"), page.locator(f"#prolific-{link.id}")
        # Each variant labelled so they can be told apart, each whole: the field shows all of it
        path, prolific_path = invite_link_paths(link)  # the token is signed afresh each time: compare its shape
        expect(page.get_by_label("Plain link")).to_have_value(re.compile(rf"^{live_server.url}/join/[^/?]+/$"))
        assert prolific.input_value() == plain.input_value() + prolific_path[len(path):]
        for field in (plain, prolific):  # wrapped, all of it in view: nothing scrolled out of its box
            assert field.evaluate("el => el.scrollWidth <= el.clientWidth && el.scrollHeight <= el.clientHeight"), (
                field.input_value())
        # The copy button beside each puts that link on the clipboard and says so
        page.locator(f'button[data-copy="prolific-{link.id}"]').click()
        expect(page.locator("#copy-status")).to_have_text("Prolific link copied.")
        assert page.evaluate("navigator.clipboard.readText()") == prolific.input_value()
        page.locator(f'button[data-copy="url-{link.id}"]').click()
        expect(page.locator("#copy-status")).to_have_text("Plain link copied.")
        assert page.evaluate("navigator.clipboard.readText()") == plain.input_value()
        # The top menu fits one line at 1280 px (an admin has the most items), no disclosure button
        expect(page.locator("#menu-button")).to_be_hidden()
        tops = page.locator(".topbar .menu-items > *").evaluate_all(
            "items => items.map(item => Math.round(item.getBoundingClientRect().top))")
        assert max(tops) - min(tops) <= 6, tops
        assert page.locator(".topbar").bounding_box()["height"] < 64
    finally:
        context.close()


def test_the_menu_on_a_phone_is_one_button_that_opens_by_keyboard(browser, live_server):
    admin = UserFactory(username="newcomer-phone", role=User.Role.ADMIN)
    batch = make_batch(models=[ModelConfigFactory(name="phone-sim")], members=[admin])
    invite_link_create(batch=batch, label="A label long enough to need room on a small screen")
    context = browser.new_context(**PHONE)
    page = context.new_page()
    try:
        login(page, live_server.url, admin.username)
        page.goto(f"{live_server.url}{reverse('research-invites', args=[batch.id])}")
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        menu = page.get_by_role("group").filter(has=page.locator("#menu-button"))
        button = page.locator("#menu-button")
        expect(button).to_be_visible()
        expect(button).to_have_accessible_name(re.compile("Menu"))
        expect(page.get_by_role("link", name="People")).to_be_hidden()
        assert page.locator(".topbar").bounding_box()["height"] < 64  # one line, not four
        button.focus()
        page.keyboard.press("Enter")
        expect(page.get_by_role("link", name="People")).to_be_visible()
        assert menu.count() == 1 and page.locator("#main-menu").get_attribute("open") is not None
        # The focus ring is visible on the button (a keyboard user sees where they are)
        assert button.evaluate("el => getComputedStyle(el).outlineStyle") != "none"
        page.keyboard.press("Tab")
        expect(page.get_by_role("link", name="Annotate")).to_be_focused()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Enter")
        expect(page.get_by_role("link", name="People")).to_be_hidden()
        # The Invites page fits: no sideways scroll, each link whole and its copy button on screen
        for field in page.locator(".link-url").all():
            assert field.evaluate("el => el.scrollWidth <= el.clientWidth && el.scrollHeight <= el.clientHeight")
        for copy in page.locator("button[data-copy]").all():
            box = copy.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    finally:
        context.close()


def test_a_finished_session_shows_its_final_time_and_names_the_model(page, live_server, no_dispatch):
    annotator = UserFactory(username="newcomer-timer")
    batch = make_batch(models=[ModelConfigFactory(name="timer-sim", display_name="Qwen2-VL 7B")])
    attach_image(batch.tasks.get())
    session = assignment_next(annotator=annotator, batch=batch).session
    run_pending_round(session)
    started = Session.objects.get(pk=session.pk).started_at
    Session.objects.filter(pk=session.pk).update(status=Session.Status.COMPLETED, corrected_round=None,
                                                 completed_at=started + timedelta(seconds=71))
    login(page, live_server.url, annotator.username)
    page.goto(f"{live_server.url}/annotate/sessions/{session.id}/")
    expect(page.locator("#done-panel")).to_be_visible()
    timer = page.locator("#time-on-item")
    expect(timer).to_have_text("1:11 on this item")  # completed_at - started_at, not the time since
    page.wait_for_timeout(2_200)
    expect(timer).to_have_text("1:11 on this item")  # it counts no more
    expect(page.locator("#round-progress")).to_have_text("finished")
    # Each answer is labelled with the model's name, never an empty "Model:"
    expect(page.locator('li[data-round="0"] .who.model')).to_have_text("Qwen2-VL 7B (simulated):")
    assert page.locator(".who.model", has_text=re.compile(r"^Model:$")).count() == 0


def test_a_leak_warning_is_shown_with_no_console_error_and_sends_nothing(page, asgi_server, no_dispatch):
    annotator = UserFactory(username="newcomer-leak")
    batch = make_batch(models=[ModelConfigFactory(name="leak-newcomer")])
    attach_image(batch.tasks.get())
    session = assignment_next(annotator=annotator, batch=batch).session
    run_pending_round(session)
    errors, failed = [], []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("response", lambda response: failed.append((response.status, response.url))
            if response.status >= 400 else None)
    login(page, asgi_server, annotator.username)
    page.goto(f"{asgi_server}/annotate/sessions/{session.id}/")
    page.fill("#feedback-input", "Is it 7390?")
    page.press("#feedback-input", "Control+Enter")
    expect(page.locator("#leak-warning")).to_be_visible()
    expect(page.locator("#leak-detected li")).to_have_text(["the number 7390"])
    expect(page.locator("#feedback-error")).to_be_hidden()
    assert errors == [] and failed == []  # a warning, not an error
    assert Round.objects.filter(session=session).count() == 1  # nothing sent before the annotator confirms
    expect(page.locator("#leak-edit")).to_be_focused()


def test_a_fire_report_shows_only_its_own_actions(page, live_server, fire_batch):
    researcher = UserFactory(username="newcomer-fire", role=User.Role.RESEARCHER)
    fire_batch.members.add(researcher)
    login(page, live_server.url, researcher.username)
    page.goto(f"{live_server.url}{reverse('research-report', args=[fire_batch.id])}")
    actions = page.locator("#report-actions")
    expect(actions.get_by_role("link", name="Invite links")).to_be_visible()
    for absent in ("Recount all sessions", "Browse sessions", "Annotator quality"):
        expect(page.get_by_role("button", name=absent).or_(page.get_by_role("link", name=absent))).to_have_count(0)
    expect(page.get_by_text(re.compile("counted sessions?|counters never updated|Export sessions"))).to_have_count(0)
    expect(page.locator("#sessions-export")).to_have_count(0)


def test_tables_3_and_4_show_n_per_cell_on_request_by_keyboard(page, live_server):
    researcher = UserFactory(username="newcomer-n", role=User.Role.RESEARCHER)
    model = ModelConfigFactory(name="gpt-4o", display_name="GPT-4o", backend=ModelConfig.Backend.REPLAY)
    batch = counted_batch(model, annotator=researcher, members=[researcher])
    login(page, live_server.url, researcher.username)
    page.goto(f"{live_server.url}{reverse('research-report', args=[batch.id])}")
    expect(page.locator("#f-model option", has_text="GPT-4o")).to_have_attribute("value", "gpt-4o")
    cell = page.locator("#accuracy-table tbody td").first
    expect(cell).to_have_text("21.3", use_inner_text=True)  # the paper's number, n hidden until asked for
    toggle = page.locator("#accuracy-table-show-n")
    toggle.focus()
    page.keyboard.press("Space")
    expect(cell).to_have_text("21.3 (17/80)", use_inner_text=True)
    expect(page.locator("#accuracy-table ~ .cell-n-note")).to_be_visible()
    page.locator("#correction-table-show-n").focus()
    page.keyboard.press("Space")
    expect(page.locator("#correction-table tbody tr").first.locator("td").nth(1)).to_have_text(
        "14.3 (9/63)", use_inner_text=True)
