"""The session page's guard against a lost event: while the model answers and nothing arrives, the page asks for a
snapshot after 10 s, then less and less often while the snapshots bring nothing new (a busy queue), and a snapshot
that does bring something (here: an answer whose event was lost) shows it and starts the guard over at 10 s.

The page's clock is Playwright's (``page.clock``): the quiet spells pass in no time. Round 0 is queued on a queue
no worker consumes, so nothing but the page's own asks reaches it until the test writes the answer."""

import json

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from annotate.models import Round, Session
from tests.browser.conftest import login
from tests.factories import ModelConfigFactory, make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class SnapshotAsks:
    """The snapshot requests the page sends on its WebSocket."""

    def __init__(self, page):
        self.page, self.count = page, 0
        page.on("websocket", lambda ws: ws.on("framesent", self._sent))

    def _sent(self, payload) -> None:
        if isinstance(payload, str) and json.loads(payload).get("type") == "snapshot":
            self.count += 1

    def after(self, ms: int) -> int:
        """Let ``ms`` of the page's (paused) time pass, give the frames and the replies a moment in real time, return
        the count. A reply is handled at the end of the span, so each span's boundaries are exact."""
        self.page.clock.run_for(ms)
        self.page.wait_for_timeout(300)
        return self.count


def test_a_quiet_page_asks_for_snapshots_less_often_and_shows_a_lost_answer(page, annotator, asgi_server):
    model = ModelConfigFactory(name="quiet-sim", queue="no-worker-listens")
    make_batch(models=[model], question="How many dots are there?")
    login(page, asgi_server, annotator.username)
    page.goto(f"{asgi_server}/?annotate=1")
    page.clock.install()
    asks = SnapshotAsks(page)
    page.click("#next-button")
    page.wait_for_url("**/annotate/sessions/*/")
    expect(page.locator("#connection")).to_have_text("Live")
    # From here the page's time passes only when the test says (pause_at takes seconds since the epoch).
    page.clock.pause_at(page.evaluate("Date.now()") / 1000 + 0.05)
    session = Session.objects.get(annotator=annotator)
    assert session.status == Session.Status.GENERATING

    assert asks.after(8_000) == 0
    assert asks.after(1_000) == 0  # quiet, but not for 10 s yet
    assert asks.after(2_000) == 1  # 11 s: the first ask; its snapshot brings nothing new
    assert asks.after(15_000) == 1  # the next spell is 20 s
    assert asks.after(6_000) == 2  # 21 s after the first ask
    assert asks.after(30_000) == 2  # then 40 s
    assert asks.after(11_000) == 3
    assert asks.after(39_000) == 3  # and no longer than 40 s
    assert asks.after(2_000) == 4

    # The model's answer arrives but its event is lost: the next ask brings it.
    Round.objects.filter(session=session, index=0).update(
        generation_status=Round.Generation.DONE, answer_text="There are 3 dots.\nAnswer: 3", extracted_answer="3",
        auto_verdict=False, final_verdict=False, verdict_source=Round.VerdictSource.AUTO, finished_at=timezone.now())
    Session.objects.filter(pk=session.pk).update(status=Session.Status.AWAITING_FEEDBACK)
    assert asks.after(41_000) == 5
    expect(page.locator('li[data-round="0"] .verdict.wrong')).to_be_visible()
    expect(page.locator("#feedback-input")).to_be_enabled()
