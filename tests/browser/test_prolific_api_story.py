"""A Prolific study run from the app in the browser, against the local fake Prolific server: the researcher checks
the connection and creates the study from the batch's Invites page, sees the cost Prolific reports and publishes;
three participants come through the Prolific link; one returns on Prolific while holding an item, and reading the
submissions frees that item at once; the approvals and the bonuses are paid from the participants page, each after
its dry run, and the fake server's ledger shows each payment once, even when the researcher sends it again.

The fake server is a thread of this process on a loopback port. The live servers are other processes, so the app
is pointed at it through their environment (the API address and the token's variable), as in production: this
story runs its own daphne with that environment (the session's shared server was started without it) beside the
session's Celery worker, which generates the model's answers."""

import pytest
from django.conf import settings
from playwright.sync_api import expect

from annotate.models import Assignment, CrowdStudy, Participation, ProlificCall, ProlificStudy, User
from tests.browser.conftest import answer_until_done, login
from tests.factories import ModelConfigFactory, UserFactory, make_batch
from tests.fake_prolific_server import running

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CODE = "PROLIFIC-DONE-9"


@pytest.fixture
def fake_prolific():
    with running() as fake:
        yield fake


@pytest.fixture
def prolific_web(fake_prolific, django_db_setup, redis_url, stack_logs):
    """daphne on the test database whose environment points the app at the fake server."""
    from tests import stack

    port = stack.free_port()
    env = {"PROLIFIC_API_URL": fake_prolific.base_url + "/api/v1/",
           settings.PROLIFIC_TOKEN_ENV: fake_prolific.token, "PROLIFIC_MAX_RETRY_WAIT": "2"}
    server = stack.start_web(stack_logs / "web-prolific.log", port, **env)
    yield f"http://127.0.0.1:{port}"
    stack.stop(server)


def new_page(browser):
    page = browser.new_context().new_page()
    page.set_default_timeout(30_000)
    return page


def come_through_prolific(browser, study: ProlificStudy, fake, pid: str):
    """What Prolific does when a participant starts: a submission, and the study URL with its placeholders filled."""
    fake.start_submission(study.prolific_id, pid)
    url = (study.external_url.replace("{{%PROLIFIC_PID%}}", pid).replace("{{%STUDY_ID%}}", study.prolific_id)
           .replace("{{%SESSION_ID%}}", f"session-{pid}"))
    page = new_page(browser)
    page.goto(url)
    page.locator("#main button[type=submit]").first.click()
    page.wait_for_url(lambda u: "/join/" not in u)
    return page


def do_the_share(page) -> None:
    for _ in range(2):
        page.click("#next-button")
        page.wait_for_url("**/annotate/sessions/*/")
        answer_until_done(page)
    expect(page.locator("#next-button")).to_contain_text("Finish: your completion code")
    page.click("#next-button")
    page.wait_for_url("**/done/")
    expect(page.locator("#completion-code")).to_have_text(CODE)


def test_a_prolific_study_created_published_followed_and_paid_from_the_pages(browser, prolific_web, fake_prolific,
                                                                              celery_worker_process):
    base, fake = prolific_web, fake_prolific
    researcher = UserFactory(username="prolific-rhea", role="researcher")
    model = ModelConfigFactory(name="prolific-story", backend_settings={"chunk_delay": 0.005,
                                                                        "correct_from_round": 1})
    batch = make_batch(models=[model], tasks=6, members=[researcher])
    batch.items_per_participant, batch.completion_code = 2, CODE
    batch.save()
    CrowdStudy.objects.create(batch=batch, bonus_rule=CrowdStudy.BonusRule.FIXED, bonus_amount="1.50",
                              screened_out_code="SCREENED-9", no_consent_code="NOCONSENT-9")

    # --- the researcher: connect, create the draft, see the cost, publish ------------------------------------------
    desk = new_page(browser)
    login(desk, base, researcher.username)
    desk.goto(f"{base}/research/batches/{batch.id}/invites/")
    desk.click("#prolific-check")
    expect(desk.locator("body")).to_contain_text("reaches the workspace Feedback Lab workspace")
    expect(desk.locator("#prolific-places-new")).to_have_value("3")  # 6 items, 2 a participant
    desk.fill("#prolific-name", "Rate a model's answers")
    desk.fill("#prolific-description", "Read a question and the model's answer; tell it what is wrong.")
    desk.fill("#prolific-minutes", "15")
    desk.fill("#prolific-reward", "2.50")
    desk.click("#prolific-create")
    expect(desk.locator("body")).to_contain_text("created as a draft")
    study = ProlificStudy.objects.get(batch=batch)
    sent = fake.studies[study.prolific_id]
    assert sent["reward"] == 250 and sent["total_available_places"] == 3
    assert sent["external_study_url"].startswith(base + "/join/")
    assert [c["code"] for c in sent["completion_codes"]] == [CODE, "SCREENED-9", "NOCONSENT-9"]
    expect(desk.locator("#prolific-cost")).to_have_text(f"{sent['total_cost']} cents")
    expect(desk.locator("#prolific-status")).to_have_text("UNPUBLISHED")
    desk.click("#prolific-publish")
    expect(desk.locator("#prolific-status")).to_have_text("ACTIVE")
    assert fake.studies[study.prolific_id]["status"] == "ACTIVE"
    study.refresh_from_db()

    # --- three participants come through the Prolific link; the third returns while holding an item ----------------
    for pid in ("pid-ada", "pid-bo"):
        page = come_through_prolific(browser, study, fake, pid)
        do_the_share(page)
        fake.set_status(pid, "AWAITING REVIEW")  # they paste the code on Prolific
        page.context.close()
    leaver = come_through_prolific(browser, study, fake, "pid-cy")
    leaver.click("#next-button")
    leaver.wait_for_url("**/annotate/sessions/*/")
    cy = User.objects.get(external_id="pid-cy", crowd_batch=batch)
    held = Assignment.objects.get(annotator=cy, status=Assignment.Status.ACTIVE)
    fake.set_status("pid-cy", "RETURNED")  # they press "Return" on Prolific
    leaver.context.close()

    desk.goto(f"{base}/research/batches/{batch.id}/invites/")
    desk.click("#prolific-sync")  # the beat task's service, run now
    expect(desk.locator("body")).to_contain_text("3 submissions read from Prolific; 1 newly returned")
    held.refresh_from_db()
    assert held.status != Assignment.Status.ACTIVE  # free again at once
    assert Participation.objects.get(user=cy).end_reason == Participation.End.RETURNED

    # --- approvals and bonuses from the participants page, each after its dry run ----------------------------------
    desk.goto(f"{base}/research/batches/{batch.id}/participants/")
    rows = {u.external_id: u.pseudonym for u in User.objects.filter(crowd_batch=batch)}
    expect(desk.locator(f"#prolific-{rows['pid-cy']} .prolific-status")).to_have_text("RETURNED")
    for pid in ("pid-ada", "pid-bo"):
        row = desk.locator(f"#prolific-{rows[pid]}")
        expect(row.locator(".prolific-status")).to_have_text("AWAITING REVIEW")
        row.get_by_role("button", name="Review").click()
        expect(desk.locator("#prolific-plan")).to_contain_text(pid)
        expect(desk.locator("main")).to_contain_text("Nothing has been sent yet")
        assert fake.submissions and all(s["status"] != "APPROVED" for s in fake.submissions.values()
                                        if s["participant_id"] == pid)
        desk.click("#prolific-confirm")
        expect(desk.locator("body")).to_contain_text("Sent to Prolific: 1")
        expect(desk.locator(f"#prolific-{rows[pid]} .prolific-status")).to_have_text("APPROVED")
    assert sorted(s["status"] for s in fake.submissions.values()) == ["APPROVED", "APPROVED", "RETURNED"]

    desk.click("#prolific-bonuses")
    expect(desk.locator("#prolific-total")).to_contain_text("Bonuses in total: 3.00")
    assert fake.ledger == []  # the dry run paid nothing
    desk.click("#prolific-confirm")
    expect(desk.locator("body")).to_contain_text("Sent to Prolific: 2")
    desk.click("#prolific-bonuses")  # the researcher tries again
    expect(desk.locator("#prolific-confirm")).to_be_disabled()  # nothing left to send
    expect(desk.locator("main")).to_contain_text("Already done on Prolific")

    assert sorted((r["participant_id"], r["amount"]) for r in fake.ledger) == [("pid-ada", 150), ("pid-bo", 150)]
    assert ProlificCall.objects.filter(batch=batch, path__contains="/pay/").count() == 1
    assert all(r["authorization"] == f"Token {fake.token}" for r in fake.requests)
    desk.context.close()
