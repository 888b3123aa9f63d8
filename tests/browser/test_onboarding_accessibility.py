"""axe-core on the pages a newcomer sets a pilot up with (issue 31): the People page (team and crowd lists, the
set-password links page), the set-password page, the import form and the import result page (failed and
succeeded), at 1280 px and 390 px wide: zero serious or critical violations, and no sideways scroll on a phone."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotate.crowd import services as crowd
from annotate.imports.jobs import import_job_create, import_job_run
from annotate.models import User
from tests.annotate.imports.files import jsonl_bytes, task
from tests.browser.conftest import login
from tests.browser.test_accessibility import assert_accessible
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def finished_import(admin, records, name, **settings):
    job = import_job_create(upload=SimpleUploadedFile("pilot.jsonl", jsonl_bytes(records)), name=name,
                            kind="interfeedback", created_by=admin, settings=settings)
    return import_job_run(job_id=job.pk)


@pytest.fixture
def setup_pages(sent_tasks):
    """An admin, a team of 60 (two pages), a crowd participant, a failed and a succeeded import."""
    admin = UserFactory(username="a11y-ada", role=User.Role.ADMIN)
    for n in range(60):
        UserFactory(username=f"a11y-annotator-with-a-long-name-{n:02d}", email=f"ann{n}@a-long-lab-domain.example.org")
    batch = make_batch(models=[ModelConfigFactory(name="a11y-onboard")])
    _, token = crowd.invite_link_create(batch=batch, label="a11y")
    crowd.participant_for_invite(invite=crowd.invite_read(token), prolific_pid="A11Y-PID")
    model = ModelConfigFactory(name="a11y-pilot-model")
    failed = finished_import(admin, [task("a"), task("b", answer="Z")], "a11y-failed")
    done = finished_import(admin, [task("a"), task("b")], "a11y-pilot", models=[model.name])
    return admin, failed, done


@pytest.mark.parametrize("width", [1280, 390])
def test_people_and_import_pages(browser, live_server, setup_pages, width):
    admin, failed, done = setup_pages
    phone = width < 600
    context = browser.new_context(viewport={"width": width, "height": 900}, is_mobile=phone, has_touch=phone)
    page = context.new_page()
    try:
        login(page, live_server.url, admin.username)

        def check(what: str) -> None:
            assert_accessible(page, f"{what} at {width} px")
            if phone:
                assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), \
                    f"{what} scrolls sideways at {width} px"

        for what, url in [("People (team)", reverse("people")),
                          ("People (team, page 2)", reverse("people") + "?page=2"),
                          ("People (crowd)", reverse("people") + "?who=crowd"),
                          ("People (no match)", reverse("people") + "?q=zzz&role=admin"),
                          ("import form", reverse("import-new")),
                          ("import form, filled again", reverse("import-new") + f"?again={failed.pk}"),
                          ("failed import result", reverse("import-job", args=[failed.pk])),
                          ("import result", reverse("import-job", args=[done.pk]))]:
            page.goto(f"{live_server.url}{url}")
            check(what)
        page.goto(f"{live_server.url}{reverse('import-new')}")
        page.locator("#import-submit").click()  # nothing filled: every field's errors
        check("import form with errors")
        page.goto(f"{live_server.url}{reverse('people')}")
        page.fill("#id_text", "username,email\na11y-new-1,new1@a-long-lab-domain.example.org\na11y-new-2,\n")
        page.click("#people-submit")
        page.locator("#links").wait_for()
        check("set-password links")
        link = page.locator("#links code").first.inner_text()
        page.context.clear_cookies()
        page.goto(link)
        page.locator("#set-password-username").wait_for()
        check("set-password page")
        page.fill("#id_new_password1", "1234")
        page.fill("#id_new_password2", "1234")
        page.locator("#main button[type=submit]").click()
        page.locator("#id_new_password2_errors").wait_for()
        check("set-password page with errors")
    finally:
        context.close()
