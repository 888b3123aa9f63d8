"""The newcomer's walk of issue 31 (items 1-5) in Chromium, on a fresh database with the demo loaded and a real
worker running the imports: a wrong address is the styled 404; the admin creates the pilot's people from a CSV,
copies all their links at once, downloads them as CSV and e-mails them (each person only their own); the
set-password page names the account and shows its errors one per line; the People list keeps a crowd participant
apart and searches; the import form shows the fields of the chosen kind; a pilot import fails (readable, nothing
"created", every setting kept for the next try), then succeeds (human labels, the batch linked); a named
annotator of the pilot is served the pilot's items only, never the demo's."""

import csv
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from annotate.crowd import services as crowd
from annotate.demo import DEMO_BATCH
from annotate.models import Assignment, Batch, Session
from tests.annotate.imports.files import task, write_zip
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PEOPLE_CSV = "username,email,first_name\npilot-ann1,ann1@lab.org,Ann\npilot-ann2,,\n"


def test_a_newcomer_sets_up_a_pilot(browser, live_server, celery_worker_process, mailoutbox, tmp_path):
    call_command("demo_setup", "--no-tiny-model")  # what `make demo` loads, on a fresh database
    demo = Batch.objects.get(name=DEMO_BATCH)
    base = live_server.url
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"], accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(30_000)

    # 1. A wrong address: the styled page, with a way back (never Django's debug page).
    login(page, base, "admin", "admin-demo")
    response = page.goto(f"{base}/no-such-page/")
    assert response.status == 404
    expect(page.locator("h1")).to_have_text("This page does not exist")
    expect(page.get_by_role("link", name="Back to your work")).to_be_visible()
    assert "Using the URLconf" not in page.content()

    # 3. People from a CSV; their links copied at once, downloaded as CSV, e-mailed.
    page.goto(f"{base}/setup/people/")
    page.select_option("#id_role", "annotator")
    page.fill("#id_text", PEOPLE_CSV)
    page.click("#people-submit")
    expect(page.locator("h1")).to_have_text("2 accounts created")
    page.wait_for_load_state("load")  # the heading can show before the page's deferred script has run
    links = {row.locator("td").nth(0).inner_text(): row.locator("code").inner_text()
             for row in page.locator("#links tbody tr").all()}
    assert set(links) == {"pilot-ann1", "pilot-ann2"}
    page.click("#copy-links")
    expect(page.locator("#copy-status")).to_have_text("Copied all the links")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.splitlines() == [f"pilot-ann1\t{links['pilot-ann1']}", f"pilot-ann2\t{links['pilot-ann2']}"]
    with page.expect_download() as download_info:
        page.click("#download-links")
    download = download_info.value
    assert download.suggested_filename == "set-password-links.csv"
    with open(download.path(), newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert [(r["username"], r["email"], r["set_password_link"]) for r in rows] == [
        ("pilot-ann1", "ann1@lab.org", links["pilot-ann1"]), ("pilot-ann2", "", links["pilot-ann2"])]
    page.click("#email-links")
    expect(page.locator("#links-emailed")).to_contain_text("E-mailed 1 person their own link: pilot-ann1.")
    expect(page.locator("#links-emailed")).to_contain_text("No e-mail address, so no e-mail: pilot-ann2")
    assert [m.to for m in mailoutbox] == [["ann1@lab.org"]]
    emailed = re.search(r"http://\S+/set-password/\S+", mailoutbox[0].body).group(0)
    assert "pilot-ann1" in mailoutbox[0].body and links["pilot-ann2"] not in mailoutbox[0].body

    # The set-password page names the account; two problems of a password are two lines.
    person = browser.new_context().new_page()
    person.goto(emailed)
    expect(person.locator("#set-password-username")).to_contain_text("pilot-ann1")
    person.fill("#id_new_password1", "1234")
    person.fill("#id_new_password2", "1234")
    person.locator("#main button[type=submit]").click()
    errors = person.locator("#id_new_password2_errors li")
    expect(errors).to_have_count(2)
    boxes = [errors.nth(i).bounding_box() for i in range(2)]
    assert boxes[1]["y"] >= boxes[0]["y"] + boxes[0]["height"] - 1  # one under the other, not run together
    person.fill("#id_new_password1", "pilot-pass-2026")
    person.fill("#id_new_password2", "pilot-pass-2026")
    person.locator("#main button[type=submit]").click()
    person.wait_for_url("**/set-password/done/")
    person.context.close()

    # The People list: the team apart from a crowd participant, searched.
    _, token = crowd.invite_link_create(batch=demo, label="demo link")
    participant = crowd.participant_for_invite(invite=crowd.invite_read(token), prolific_pid="PID-123")
    page.goto(f"{base}/setup/people/")
    team = page.locator("#people-list tbody tr td:first-child").all_inner_texts()
    assert "pilot-ann1" in team and "admin" in team and participant.username not in team
    page.fill("#people-q", "pilot")
    page.click("#people-filter")
    expect(page.locator("#people-list tbody tr")).to_have_count(2)
    page.select_option("#people-role", "researcher")
    page.click("#people-filter")
    expect(page.locator("#people-list tbody")).to_contain_text("Nobody matches.")
    page.get_by_role("link", name=re.compile("Crowd participants")).click()
    expect(page.locator("#people-list tbody tr")).to_have_count(1)
    expect(page.locator("#people-list tbody tr td").first).to_have_text(participant.username)

    # 5. The import form shows the chosen kind's fields; a failed dry run, then the real import.
    page.goto(f"{base}/imports/new/")
    expect(page.locator("#field-images")).to_be_hidden()
    expect(page.locator("#field-column_map")).to_be_hidden()
    page.select_option("#id_kind", "rows")
    expect(page.locator("#field-column_map")).to_be_visible()
    page.select_option("#id_kind", "fire")
    expect(page.locator("#field-images")).to_be_visible()
    expect(page.locator("#field-models")).to_be_hidden()
    page.select_option("#id_kind", "interfeedback")
    expect(page.locator("#field-models")).to_be_visible()
    bad = write_zip(tmp_path / "pilot-bad.zip", [task("p-1"), task("p-2", answer="Z")])
    page.set_input_files("#id_file", str(bad))
    page.fill("#id_name", "pilot")
    page.locator("#id_models").get_by_label(re.compile("Demo student")).check()
    page.fill("#id_annotators", "pilot-ann1,pilot-ann2")
    page.fill("#id_overlap", "1")
    page.fill("#id_instructions", "Say what is wrong, never the answer.")
    page.check("#id_dry_run")
    page.click("#import-submit")
    page.wait_for_url(re.compile(r".*/imports/\d+/$"))
    expect(page.locator("#job-status")).to_have_text("Failed", timeout=60_000)
    expect(page.locator("#import-outcome")).to_have_text("1 problem found; nothing was imported.")
    report = page.locator("#job-report").inner_text()
    assert "created" not in report.lower() and "`" not in report and "_new" not in report
    expect(page.locator("#report-problems")).to_contain_text("line 2, field answer")
    page.click("#import-again")
    expect(page.locator("#import-again-note")).to_be_visible()
    expect(page.locator("#id_name")).to_have_value("pilot")
    expect(page.locator("#id_annotators")).to_have_value("pilot-ann1,pilot-ann2")
    expect(page.locator("#id_overlap")).to_have_value("1")
    expect(page.locator("#id_instructions")).to_have_value("Say what is wrong, never the answer.")
    expect(page.locator("#id_models").get_by_label(re.compile("Demo student"))).to_be_checked()
    expect(page.locator("#id_dry_run")).to_be_checked()
    page.uncheck("#id_dry_run")
    good = write_zip(tmp_path / "pilot.zip", [task("p-1"), task("p-2")])
    page.set_input_files("#id_file", str(good))
    page.click("#import-submit")
    page.wait_for_url(re.compile(r".*/imports/\d+/$"))
    expect(page.locator("#job-status")).to_have_text("Succeeded", timeout=60_000)
    expect(page.locator("#import-outcome")).to_have_text("Imported.")
    report = page.locator("#job-report").inner_text()
    assert "Tasks created" in report and "New work items (task × model)" in report
    assert "images_new" not in report and "work_items_new" not in report
    pilot = Batch.objects.get(name="pilot")
    page.click("#import-batch")
    page.wait_for_url(f"**/research/batches/{pilot.id}/")

    # 2. A named annotator of the pilot is served the pilot's two items, never the demo's.
    annotator = browser.new_context().new_page()
    login(annotator, base, "pilot-ann1", "pilot-pass-2026")
    annotator.goto(f"{base}/?annotate=1")
    expect(annotator.locator("#progress")).to_contain_text("Remaining: 2")
    for _ in range(2):
        annotator.goto(f"{base}/?annotate=1")
        annotator.click("#next-button")
        annotator.wait_for_url("**/annotate/sessions/*/")
        session = Session.objects.get(pk=int(annotator.url.rstrip("/").split("/")[-1]))
        assert session.batch_id == pilot.id
        Assignment.objects.filter(pk=session.assignment_id).update(status=Assignment.Status.SKIPPED)
    assert not Assignment.objects.filter(annotator__username="pilot-ann1", work_item__batch=demo).exists()
    annotator.context.close()
    # The demo's own annotator is still served the demo batch.
    demo_user = browser.new_context().new_page()
    login(demo_user, base, "annotator", "annotate-demo")
    demo_user.goto(f"{base}/?annotate=1")
    demo_user.click("#next-button")
    demo_user.wait_for_url("**/annotate/sessions/*/")
    assert Session.objects.get(pk=int(demo_user.url.rstrip("/").split("/")[-1])).batch_id == demo.id
    demo_user.context.close()
    context.close()
