"""Attention checks with paid strangers, in the browser on the real server with a real worker: a batch with a share
of 3 and an attention rate of 0.1 (which once gave nobody a check). Three Prolific participants each finish and
each meet exactly their planned check, and nothing on the check's page or in its WebSocket frames is what a
regular item lacks. A fourth is screened out, then opens every step's URL: never a server error."""

import json
import re

import pytest
from playwright.sync_api import expect

from annotate.crowd import services as crowd
from annotate.crowd.study import study_update
from annotate.models import Assignment, Batch, User
from annotate.queue.gold import planned_positions
from annotate.queue.services import work_items_create_for_batch
from tests.browser.conftest import answer_until_done
from tests.factories import ModelConfigFactory, TaskFactory, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CODE = "CHECKED-3"
SCREENING = [{"id": "leak", "text": "May your feedback state the answer before the last round?",
              "options": ["Yes", "No"], "answer": "No", "explanation": "The model must find it by itself."}]
PAGE_SHAPE = """() => [...document.querySelectorAll('#main *')]
    .filter(e => e.offsetParent !== null || e.tagName === 'DIALOG')
    .map(e => e.tagName + '#' + e.id + '.' + e.className)"""


def study_batch():
    model = ModelConfigFactory(name="check-story", display_name="Check story model",
                               backend_settings={"chunk_delay": 0.003, "correct_from_round": 1})
    batch = make_batch(models=[model], tasks=9, answer_type="number", ground_truth="7", category="count")
    TaskFactory(batch=batch, is_gold=True, answer_type="number", ground_truth="9", category="count",
                external_id="gold-1", metadata={"gold_feedback_terms": ["picture"]})
    work_items_create_for_batch(batch=batch)
    crowd.batch_set_completion_code(batch=batch, code=CODE)
    study_update(batch=batch, settings={"consent": "You will give feedback to an AI model.", "screening": SCREENING,
                                        "screened_out_code": "OUT", "attention_rate": 0.1})
    _, token = crowd.invite_link_create(batch=batch, label="prolific", items_per_participant=3)
    batch.refresh_from_db()
    return batch, token


def start(browser, base, token, pid, *, screening_answer: str):
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{base}/join/{token}/?PROLIFIC_PID={pid}&STUDY_ID=s-1&SESSION_ID=x-{pid}")
    page.locator("#join-button").click()
    page.wait_for_url("**/study/consent/")
    page.locator("#consent-agree").click()
    page.wait_for_url("**/study/screening/")
    for _ in range(2 if screening_answer == "Yes" else 1):
        page.get_by_label(screening_answer).check()
        page.locator("#screening-submit").click()
    return page


def record_frames(frames: dict[str, list[str]]):
    """A page's WebSocket listener: every frame received, by the socket's URL (one socket per session page)."""
    def on_socket(ws):
        ws.on("framereceived", lambda payload: frames.setdefault(ws.url, []).append(payload))
    return on_socket


def test_three_participants_each_meet_their_planned_check_and_it_looks_like_any_item(
        browser, asgi_server, celery_worker_process):
    batch, token = study_batch()
    checks_seen = []
    for n in range(3):
        pid = f"5f1d2c3b4a5e6f7a8b9c0d{n:02d}"
        page = start(browser, asgi_server, token, pid, screening_answer="No")
        frames: dict[str, list[str]] = {}
        page.on("websocket", record_frames(frames))
        page.locator("#screening-continue").click()
        page.wait_for_url(f"{asgi_server}/")
        page.locator("#next-button").click()
        shapes = []
        for position in (1, 2, 3):
            page.wait_for_url("**/annotate/sessions/*/")
            expect(page.locator("#session-progress")).to_contain_text(f"Item {position} of 3 in your share")
            page.locator("#feedback-input:focus").wait_for()  # the model's first answer is in, wrong
            shapes.append(page.evaluate(PAGE_SHAPE))
            answer_until_done(page)  # its feedback names "the picture": a careful participant
            page.keyboard.press("n")
            if position < 3:
                page.wait_for_url(lambda url, seen=page.url: url != seen and "/annotate/sessions/" in url)
        page.wait_for_url("**/done/")
        expect(page.locator("#completion-code")).to_have_text(CODE)

        user = User.objects.get(external_id=pid)
        served = list(Assignment.objects.filter(annotator=user).order_by("position").values_list(
            "position", "work_item__is_check", "status"))
        assert [s for _, _, s in served] == ["completed"] * 3
        met = [position for position, is_check, _ in served if is_check]
        assert met == planned_positions(seed=batch.serving_seed, annotator_id=user.pk, rate=0.1, share=3, up_to=3)
        assert len(met) == 1  # max(1, round(0.1 * 3))
        checks_seen.append(met[0])

        # The check's page: the same visible elements as a regular item's, in the same order.
        check_shape = shapes[met[0] - 1]
        for shape in shapes:
            assert shape == check_shape, set(shape) ^ set(check_shape)
        # Its WebSocket frames: the same kinds, with the same keys, and nothing naming the check.
        by_session = [frames[url] for url in sorted(frames, key=lambda u: int(re.findall(r"\d+", u)[-1]))]
        assert len(by_session) == 3
        kinds = [sorted({(f["type"], tuple(sorted(f))) for f in map(json.loads, session)}) for session in by_session]
        assert kinds[met[0] - 1] == kinds[met[0] % 3] and kinds[0] == kinds[1] == kinds[2]
        check_text = " ".join(by_session[met[0] - 1]).lower()
        assert "gold" not in check_text and "gold-1" not in page.content()
        page.context.close()

    # One gold item, met by all three (outside the overlap), and each check scored as passed.
    from annotate.crowd.attention import attention_checks

    checks = attention_checks(Batch.objects.get(pk=batch.pk))
    assert sorted(row.checked for row in checks.values()) == [1, 1, 1]
    assert all(row.failed == 0 for row in checks.values())


STEP_URLS = ["/", "/study/", "/study/consent/", "/study/screening/", "/study/survey/pre/", "/study/survey/post/",
             "/study/leave/", "/done/", "/annotate/next/", "/api/study/", "/api/next/"]


def test_a_participant_screened_out_opens_every_step_and_meets_no_server_error(browser, asgi_server):
    batch, token = study_batch()
    page = start(browser, asgi_server, token, "5f1d2c3b4a5e6f7a8b9c0dff", screening_answer="Yes")
    page.locator("#screening-continue").click()
    expect(page.locator("#end-code")).to_have_text("OUT")
    statuses = {}
    for path in STEP_URLS:  # as the browser's Back button or a bookmark would open them (same cookies)
        statuses[path] = page.request.get(f"{asgi_server}{path}").status
    assert all(status < 500 for status in statuses.values()), statuses
    page.goto(f"{asgi_server}/study/consent/")  # a step page opened again: the end page, with the code
    expect(page.locator("#end-code")).to_have_text("OUT")
    # And the forms, posted late (Back, then submit): a page or a clear 4xx, never a 500.
    for path in ["/study/consent/", "/study/screening/", "/study/survey/pre/", "/study/survey/post/"]:
        response = page.request.post(f"{asgi_server}{path}", form={"answer": "agree"},
                                     headers={"Referer": f"{asgi_server}{path}"})
        assert response.status < 500, (path, response.status)
    assert not Assignment.objects.filter(annotator__external_id="5f1d2c3b4a5e6f7a8b9c0dff").exists()
    page.context.close()
