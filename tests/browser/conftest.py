"""Playwright driving Debian's chromium (never a downloaded browser) against real servers."""

import contextlib
import re

import pytest
from playwright.sync_api import expect

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--headless=new", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(autouse=True)
def _worker_settles_before_flush(request, transactional_db):
    """Set up after the database, so torn down before its flush: a test that ends while the worker still
    generates a round (or counts a session) waits for it instead of deadlocking with the flush."""
    yield
    from tests.stack import wait_database_quiet, wait_worker_settled

    if "celery_worker_process" in request.fixturenames:
        wait_worker_settled()
    wait_database_quiet()


@pytest.fixture
def page(browser):
    """A fresh page; any Content-Security-Policy violation it logs fails the test (scripts, the WebSocket, images
    must all pass the policy the app sends)."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(30_000)
    violations = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text or "Refused to" in message.text else None)
    yield page
    _leave(page)
    context.close()
    assert not violations, f"CSP violations: {violations}"


def _leave(page) -> None:
    """Leave the page as a person would, while the live server still runs: what leaving sends (a FIRE page posts its
    unsaved draft with `keepalive` on pagehide, which Playwright does not report) reaches the server now, and the
    flush after the test waits for it (`wait_database_quiet`) instead of deadlocking with it (seen in CI)."""
    if not page.is_closed():
        with contextlib.suppress(Exception):  # a page that cannot navigate any more sends nothing either
            page.goto("about:blank")


def login(page, base_url: str, username: str, password: str = "pw-for-tests") -> None:
    page.goto(f"{base_url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("#main button[type=submit]")  # the login form's, not the top bar's language button
    page.wait_for_url(lambda url: "/login/" not in url)


def focused(page) -> str:
    return page.evaluate("document.activeElement.id || document.activeElement.tagName")


def tab_to(page, element_id: str, limit: int = 25) -> None:
    """Tab (like a person, no mouse) until the element has the focus."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if focused(page) == element_id:
            return
    raise AssertionError(f"Tab never reached #{element_id}")


def login_by_keyboard(page, base_url: str, username: str, password: str = "pw-for-tests") -> None:
    """Log in as a person without a mouse: the username field has the focus on arrival; type, Tab, type, Enter."""
    page.goto(f"{base_url}/login/")
    expect(page.locator("#id_username")).to_be_focused()
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(password)
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: "/login/" not in url)


def start_next_item_by_keyboard(page, kind: str = "conversations") -> None:
    """From the annotator's home (where logging in lands): Tab to "Start next item", Enter, wait for the item."""
    tab_to(page, "next-button")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/annotate/{kind}/*/")


def answer_until_done(page, feedback: str = "Check your reasoning about the picture more carefully.") -> None:
    """On a session page: feedback by keyboard (stating no answer), round after round, until the session is over
    (the simulated model improves on feedback)."""
    for index in (1, 2, 3):
        page.locator("#done-panel:visible, #feedback-input:focus").first.wait_for(timeout=30_000)
        if page.locator("#done-panel").is_visible():
            break
        page.keyboard.type(feedback)
        page.keyboard.press("Control+Enter")
        expect(page.locator(f'li[data-round="{index}"] .verdict')).to_have_class(re.compile("correct|wrong"))
    expect(page.locator("#done-panel")).to_be_visible()
