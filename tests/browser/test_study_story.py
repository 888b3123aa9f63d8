"""A whole study in the browser, on PostgreSQL with a real worker: an admin creates two models and three annotators,
imports a batch naming a researcher, with instructions and a category order; the researcher creates an invite
link and opens the live dashboard; annotators (one through the link) finish the batch while the dashboard moves
without a reload; the researcher downloads the study bundle, whose tables follow the batch's category order and
name the models by their display names."""

import io
import re
import zipfile

import pytest
from playwright.sync_api import expect

from annotate.models import Batch, Session, User
from tests.annotate.imports.files import task, write_zip
from tests.browser.conftest import answer_until_done, login
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CATEGORY_ORDER = "MMMU-Pro,Visual Logic"  # not the file's order (Visual Logic first)


def new_page(browser):
    return browser.new_context().new_page()


def set_password(browser, link: str, password: str = "pw-story-2026") -> None:
    page = new_page(browser)
    page.goto(link)
    page.fill("#id_new_password1", password)
    page.fill("#id_new_password2", password)
    page.locator("#main button[type=submit]").click()
    page.wait_for_url("**/set-password/done/")
    page.context.close()


def finish_items(page, base: str, count: int) -> None:
    """Take `count` items from the home page and finish each on the session page, by keyboard."""
    page.goto(f"{base}/?annotate=1")
    page.click("#next-button")
    for item in range(count):
        page.wait_for_url("**/annotate/sessions/*/")
        answer_until_done(page)
        if item < count - 1:
            page.keyboard.press("n")
            page.wait_for_url(lambda url, seen=page.url: url != seen)


def test_a_study_from_setup_to_bundle(browser, asgi_server, celery_worker_process, tmp_path):
    admin = UserFactory(username="story-admin", role=User.Role.ADMIN, is_staff=True, is_superuser=True)
    UserFactory(username="story-rita", role=User.Role.RESEARCHER)

    # --- the admin sets up: two models, three annotators, the batch -------------------------------------------
    page = new_page(browser)
    login(page, asgi_server, admin.username)
    for name, shown in (("story-a", "Model Alpha"), ("story-b", "Model Beta")):
        page.goto(f"{asgi_server}/setup/models/")
        page.fill("#id_name", name)
        page.fill("#id_display_name", shown)
        page.select_option("#id_backend", "simulated")
        page.fill("#id_backend_settings", '{"chunk_delay": 0.005}')
        page.click("#model-submit")
        page.wait_for_url(f"**/setup/models/{name}/")
    page.goto(f"{asgi_server}/setup/people/")
    page.select_option("#id_role", "annotator")
    page.fill("#id_text", "username\nstory-ann1\nstory-ann2\nstory-ann3\n")
    page.click("#people-submit")
    links = {row.locator("td").nth(0).inner_text(): row.locator("code").inner_text()
             for row in page.locator("#links tbody tr").all()}
    assert set(links) == {"story-ann1", "story-ann2", "story-ann3"}
    for username in ("story-ann1", "story-ann2"):
        set_password(browser, links[username])

    batch_file = write_zip(tmp_path / "study.zip", [
        task("vl-1", category="Visual Logic"), task("mp-1", category="MMMU-Pro", answer="C")])
    page.goto(f"{asgi_server}/imports/new/")
    page.set_input_files("#id_file", str(batch_file))
    page.fill("#id_name", "story-study")
    for label in ("Model Alpha", "Model Beta"):
        page.locator("#id_models").get_by_label(re.compile(label)).check()
    page.locator("#id_researchers").get_by_label(re.compile("story-rita")).check()
    page.fill("#id_overlap", "1")
    page.fill("#id_instructions", "Say **what** is wrong, never the answer.")
    page.fill("#id_category_order", CATEGORY_ORDER)
    page.locator("#main button[type=submit]").first.click()
    page.wait_for_url(re.compile(r".*/imports/\d+/$"))
    expect(page.locator("#job-status")).to_have_text("Succeeded", timeout=60_000)
    batch = Batch.objects.get(name="story-study")
    assert batch.category_order == ["MMMU-Pro", "Visual Logic"] and batch.work_items.count() == 4

    # --- the researcher recruits and watches -------------------------------------------------------------------
    researcher = new_page(browser)
    login(researcher, asgi_server, "story-rita")
    researcher.goto(f"{asgi_server}/research/batches/{batch.id}/")
    researcher.click("text=Invite links")
    researcher.fill("#link-label", "pilot")
    researcher.fill("#link-items", "1")
    researcher.fill("#link-code", "STORY-DONE")
    researcher.click("#create-link")
    invite = researcher.locator(".link-url").first.input_value()
    assert "/join/" in invite
    researcher.goto(f"{asgi_server}/research/batches/{batch.id}/dashboard/")
    expect(researcher.locator("#live-state")).to_contain_text("Live")
    expect(researcher.locator("#total-done")).to_have_text("0")
    expect(researcher.locator("#total-left")).to_have_text("4")

    # --- annotators finish the batch: one through the link, two with accounts -----------------------------------
    participant = new_page(browser)
    participant.goto(invite)
    participant.locator("#main button[type=submit]").first.click()
    finish_items(participant, asgi_server, 1)
    expect(researcher.locator("#total-done")).to_have_text("1", timeout=15_000)  # no reload: pushed

    for username, items in (("story-ann1", 2), ("story-ann2", 1)):
        annotator = new_page(browser)
        login(annotator, asgi_server, username, password="pw-story-2026")
        finish_items(annotator, asgi_server, items)
        annotator.context.close()
    expect(researcher.locator("#total-done")).to_have_text("4", timeout=15_000)
    expect(researcher.locator("#total-left")).to_have_text("0")
    assert Session.objects.filter(batch=batch, status=Session.Status.COMPLETED).count() == 4

    researcher.goto(f"{asgi_server}/research/batches/{batch.id}/invites/")
    row = researcher.locator("#links-table tbody tr").first
    expect(row.locator(".joined")).to_have_text("1")
    expect(row.locator(".items-done")).to_have_text("1")
    expect(row.locator(".finished")).to_have_text("1")

    # --- the researcher downloads the study bundle ---------------------------------------------------------------
    researcher.goto(f"{asgi_server}/research/batches/{batch.id}/")
    researcher.locator("#bundle-export button").click()
    link = researcher.locator(".job-result a")
    link.wait_for(timeout=60_000)
    with researcher.expect_download() as download:
        link.click()
    with zipfile.ZipFile(io.BytesIO(open(download.value.path(), "rb").read())) as bundle:
        names = set(bundle.namelist())
        assert {"README.md", "instructions.md", "tables/table3_accuracy.md", "tables/table4_correction.md"} <= names
        assert "never the answer" in bundle.read("instructions.md").decode()
        table3 = bundle.read("tables/table3_accuracy.md").decode()
    header = next(line for line in table3.splitlines() if "Visual Logic" in line)
    assert header.index("MMMU-Pro") < header.index("Visual Logic")  # the batch's order, not the file's
    assert "Model Alpha" in table3 and "Model Beta" in table3 and "story-a" not in table3
