"""An annotator completes a session in a real browser, over the real web server, worker and Redis.

Every HTTP response and WebSocket frame the page receives is recorded, to check that the ground truth
reaches the browser only once round 3 begins.
"""

import pytest

from annotate.models import Session
from tests.browser.conftest import login
from tests.factories import ModelConfigFactory, attach_image, make_batch
from tests.stack import wait_counted

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GROUND_TRUTH = "7391"


class Recorder:
    """Everything the browser received: page HTML, API bodies, WebSocket frames."""

    def __init__(self, page):
        self.payloads: list[str] = []
        page.on("response", self._response)
        page.on("websocket", lambda ws: ws.on("framereceived", lambda frame: self.payloads.append(str(frame))))

    def _response(self, response):
        if "text" in (response.headers.get("content-type") or "") or "json" in (response.headers.get("content-type") or ""):
            try:
                self.payloads.append(response.text())
            except Exception:  # redirects have no body
                pass

    def leaked(self) -> list[str]:
        return [p[:200] for p in self.payloads if GROUND_TRUTH in p]

    def leaked_before_reveal(self) -> list[str]:
        """Payloads with the ground truth other than the snapshots that reveal it (round 3 begins)."""
        revealing = ('"ground_truth_revealed": true', '"ground_truth_revealed":true')
        return [p for p in self.payloads if GROUND_TRUTH in p and not any(marker in p for marker in revealing)]


def wait_verdict(page, index: int, expected: str):
    page.wait_for_selector(f'li[data-round="{index}"] .verdict.{expected}', timeout=30_000)


def test_annotator_completes_a_session_and_sees_the_truth_only_in_round_three(
    page, annotator, asgi_server, celery_worker_process
):
    model = ModelConfigFactory(name="browser-sim", backend_settings={"chunk_delay": 0.01})
    batch = make_batch(models=[model], category="Mathematical Logic", question="How many dots are there?")
    attach_image(batch.tasks.get())
    recorder = Recorder(page)

    login(page, asgi_server, annotator.username)
    page.goto(f"{asgi_server}/?annotate=1")
    page.click("#next-button")
    page.wait_for_url("**/annotate/sessions/*/")
    page.wait_for_selector("#task-images img")
    wait_verdict(page, 0, "wrong")
    assert "Answer:" in page.locator('li[data-round="0"] .answer-text').inner_text()

    for index in (1, 2):
        assert recorder.leaked() == [], "the ground truth reached the browser before round 3"
        assert GROUND_TRUTH not in page.content()
        assert page.locator("#ground-truth").is_hidden()
        # No number in it: on a number task any number is a stated answer and would be warned about.
        page.fill("#feedback-input", f"That is not right; count the dots row by row ({'once' if index == 1 else 'twice'}).")
        page.press("#feedback-input", "Control+Enter")  # the keyboard shortcut sends
        wait_verdict(page, index, "wrong")

    assert recorder.leaked_before_reveal() == [], "only the snapshot opening round 3 may carry the ground truth"
    page.wait_for_selector("#ground-truth:not([hidden])")
    assert GROUND_TRUTH in page.locator("#ground-truth").inner_text()
    assert "last" in page.locator("#feedback-label").inner_text()
    page.fill("#feedback-input", "Look at the whole picture once more.")
    page.click("#feedback-submit")
    wait_verdict(page, 3, "correct")
    page.wait_for_selector("#done-panel:not([hidden])")
    assert "corrected in round 3" in page.locator("#outcome").inner_text()
    assert recorder.leaked(), "the ground truth is shown in round 3"

    session = Session.objects.get(annotator=annotator)
    assert session.status == Session.Status.COMPLETED and session.corrected_round == 3
    assert session.rounds.count() == 4
    wait_counted(session)
