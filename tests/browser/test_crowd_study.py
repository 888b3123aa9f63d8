"""A crowd study's whole life in the browser, on the real server with a real worker: a Prolific participant
consents, passes the screening (a wrong first try, then right), answers the pre-study questionnaire, meets an
attention check among their items, answers the post-study questionnaire and gets the completion code; another
fails the screening and never reaches an item; a third leaves midway and their item is free at once; the
researcher approves by the suggestions and downloads the bonus file."""

import re

import pytest
from playwright.sync_api import expect

from annotate.crowd import services as crowd
from annotate.crowd.study import study_update
from annotate.models import Assignment, Batch, Participation, Session, WorkItem
from tests.annotate.crowd.study_data import STUDY
from tests.browser.conftest import answer_until_done, login
from tests.factories import ModelConfigFactory, TaskFactory, UserFactory, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CODE = "STUDY-DONE-7"


def study_batch(researcher):
    model = ModelConfigFactory(name="crowd-story", backend_settings={"chunk_delay": 0.005, "correct_from_round": 1})
    batch = make_batch(models=[model], tasks=4, members=[researcher])
    TaskFactory(batch=batch, external_id="gold-1", is_gold=True, answer_type="manual", ground_truth="7391",
                metadata={"gold_check_type": "number"})
    from annotate.queue.services import work_items_create_for_batch

    work_items_create_for_batch(batch=batch)
    Batch.objects.filter(pk=batch.pk).update(items_per_participant=2, gold_rate=0.5)  # the 2nd item: the check
    batch.refresh_from_db()
    crowd.batch_set_completion_code(batch=batch, code=CODE)
    study_update(batch=batch, settings={**STUDY, "bonus_amount": "0.50"})
    _, token = crowd.invite_link_create(batch=batch, label="prolific")
    return batch, token


def new_page(browser):
    page = browser.new_context().new_page()
    page.set_default_timeout(30_000)
    return page


def join(page, base, token, pid):
    page.goto(f"{base}/join/{token}/?PROLIFIC_PID={pid}&STUDY_ID=s-1&SESSION_ID=x-{pid}")
    page.locator("#join-button").click()


def consent_and_screening(page, *, second_answer: str):
    page.wait_for_url("**/study/consent/")
    expect(page.locator("#consent-text strong")).to_have_text("Your answers are kept under a pseudonym.")
    page.locator("#consent-agree").click()
    page.wait_for_url("**/study/screening/")
    expect(page.locator("#screening-progress")).to_contain_text("Question 1 of 2")
    page.get_by_label("Yes").check()
    page.locator("#screening-submit").click()
    expect(page.locator("#second-try")).to_contain_text("one more try")
    page.get_by_label(second_answer).check()
    page.locator("#screening-submit").click()


def judge_gold_session(page):
    """The attention check: the model's first answer is wrong (say so), then right after feedback (say so)."""
    expect(page.locator("#verdict-panel")).to_be_visible()
    page.locator("#verdict-wrong").click()
    expect(page.locator("#feedback-input")).to_be_focused()
    page.keyboard.type("Count the digits again, one by one.")
    page.keyboard.press("Control+Enter")
    expect(page.locator('li[data-round="1"] .answer-text')).not_to_be_empty()
    expect(page.locator("#verdict-panel")).to_be_visible()
    page.locator("#verdict-correct").click()
    expect(page.locator("#done-panel")).to_be_visible()


def test_a_crowd_study_from_consent_to_bonus(browser, asgi_server, celery_worker_process):
    researcher = UserFactory(username="crowd-rita", role="researcher")
    batch, token = study_batch(researcher)

    # --- a participant goes all the way ------------------------------------------------------------------------
    page = new_page(browser)
    join(page, asgi_server, token, "PID-ALL")
    consent_and_screening(page, second_answer="No")
    expect(page.locator("#result-title")).to_have_text("Right")
    expect(page.locator("#screening-explanation")).to_contain_text("by itself")
    page.locator("#screening-continue").click()
    page.get_by_label("3", exact=True).check()
    page.locator("#screening-submit").click()
    page.locator("#screening-continue").click()
    page.wait_for_url("**/study/survey/pre/")
    page.locator("#block-english").get_by_label("4").check()
    page.get_by_label("Computer").check()
    page.locator("#survey-submit").click()
    page.wait_for_url(f"{asgi_server}/")
    page.locator("#next-button").click()
    page.wait_for_url("**/annotate/sessions/*/")
    answer_until_done(page)  # an ordinary item
    page.keyboard.press("n")
    page.wait_for_url(lambda url, seen=page.url: url != seen and "/annotate/sessions/" in url)
    judge_gold_session(page)  # the attention check, met
    page.keyboard.press("n")
    page.wait_for_url("**/study/survey/post/")  # the questionnaire before the code
    page.locator("#survey-submit").click()
    expect(page.locator("#survey-errors")).to_be_visible()  # required questions left blank
    page.get_by_role("checkbox", name="Question").check()
    page.locator("#q-minutes").fill("9")
    page.locator("#survey-submit").click()
    page.wait_for_url("**/done/")
    expect(page.locator("#completion-code")).to_have_text(CODE)
    expect(page.get_by_role("link", name="Return to Prolific")).to_have_attribute(
        "href", f"https://app.prolific.com/submissions/complete?cc={CODE}")
    gold = Session.objects.get(annotator__external_id="PID-ALL", task__is_gold=True)
    assert gold.status == Session.Status.COMPLETED
    page.context.close()

    # --- a participant fails the screening ---------------------------------------------------------------------
    page = new_page(browser)
    join(page, asgi_server, token, "PID-OUT")
    consent_and_screening(page, second_answer="Yes")  # wrong twice: the pass mark can no longer be reached
    page.locator("#screening-continue").click()
    expect(page.locator("#end-code")).to_have_text("SCREENED-OUT")
    page.goto(f"{asgi_server}/")
    expect(page.locator("#end-reason")).to_contain_text("did not reach the mark")
    assert not Assignment.objects.filter(annotator__external_id="PID-OUT").exists()
    page.context.close()

    # --- a participant leaves midway -----------------------------------------------------------------------------
    page = new_page(browser)
    join(page, asgi_server, token, "PID-LEFT")
    consent_and_screening(page, second_answer="No")
    page.locator("#screening-continue").click()
    page.get_by_label("3", exact=True).check()
    page.locator("#screening-submit").click()
    page.locator("#screening-continue").click()
    page.locator("#block-english").get_by_label("2").check()
    page.get_by_label("Phone").check()
    page.locator("#survey-submit").click()
    page.locator("#next-button").click()
    page.wait_for_url("**/annotate/sessions/*/")
    held = Assignment.objects.get(annotator__external_id="PID-LEFT", status="active")
    page.goto(f"{asgi_server}/done/")
    page.locator("#leave-link").click()
    page.locator("#leave-confirm").click()
    expect(page.locator("#end-reason")).to_contain_text("You have left this study")
    held.refresh_from_db()
    assert held.status == "expired" and WorkItem.objects.get(pk=held.work_item_id).active_count == 0  # at once
    page.context.close()

    # --- the researcher approves and pays -------------------------------------------------------------------------
    page = new_page(browser)
    login(page, asgi_server, researcher.username)
    page.goto(f"{asgi_server}/research/batches/{batch.id}/participants/")
    row = page.locator("#participants-table tbody tr", has_text="PID-ALL")
    expect(row.locator(".suggestion")).to_contain_text("approve")
    expect(row.locator(".attention")).to_have_text("0 / 1")
    expect(page.locator("#participants-table tbody tr", has_text="PID-LEFT").locator(".state")).to_have_text(
        "returned")
    page.locator("#accept-suggestions").click()
    expect(row.locator(".current-decision")).to_contain_text("approved")
    with page.expect_download() as download:
        page.locator("#download-bonuses-csv").click()
    assert open(download.value.path()).read() == "PID-ALL,1.00\n"  # 2 completed items x 0.50
    with page.expect_download() as download:
        page.locator("#download-approvals-txt").click()
    assert open(download.value.path()).read() == "PID-ALL\n"
    page.goto(f"{asgi_server}/research/batches/{batch.id}/dashboard/")
    expect(page.locator("#participants-returned")).to_have_text("1")
    expect(page.locator("#participants-screened_out")).to_have_text("1")
    assert re.fullmatch(r"\d+", page.locator("#participants-joined").inner_text())
    assert Participation.objects.get(user__external_id="PID-ALL").finished_at is not None
    page.context.close()
