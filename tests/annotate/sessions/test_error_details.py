"""A failed model call, as the people on each side see it: annotators and crowd participants get a plain sentence
(what happened, what to do), never the server's address, the exception or the server's words; researchers see the
detail on the session's research page and the study dashboard. A model server that refuses connections for a few
seconds (a restart) is tried again within the call's retry budget instead of failing the round at once."""

from __future__ import annotations

import threading
import time

import pytest
from django.test import Client
from django.urls import reverse

from annotate.crowd import services as crowd
from annotate.models import ModelConfig, Round, User
from annotate.queue.services import assignment_next
from tests.annotate.helpers import run_pending_round
from tests.factories import ModelConfigFactory, UserFactory, make_batch
from tests.fake_openai_server import FakeOpenAI, serving
from tests.stack import free_port

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


def participant_session(batch):
    """A crowd participant (joined through an invite link) with a session of ``batch``, and their browser."""
    _, token = crowd.invite_link_create(batch=batch)
    browser = Client()
    assert browser.post(reverse("crowd-join", args=[token]) + "?PROLIFIC_PID=p-errors").status_code == 302
    participant = User.objects.get(pk=browser.session["_auth_user_id"])
    return assignment_next(annotator=participant).session, browser


def openai_model(base_url: str, **settings) -> ModelConfig:
    return ModelConfigFactory(name="served", backend=ModelConfig.Backend.OPENAI, backend_settings={
        "base_url": base_url, "model": "tiny-model", **settings})


@pytest.fixture(params=["refused", "unknown model", "broke off", "empty"])
def failure(request, fake):
    """A model config that fails the round in one of the ways servers fail, what the annotator's page calls it,
    and a piece of the detail that only researchers may see."""
    if request.param == "refused":
        port = free_port()  # nothing listens there
        return openai_model(f"http://127.0.0.1:{port}/v1", retry_budget=0.3, backoff_base=0.05), "no_answer", \
            f"127.0.0.1:{port}"
    if request.param == "unknown model":
        return openai_model(fake.base_url, model="no-such-model"), "model", "no-such-model"
    if request.param == "broke off":
        fake.stream_errors = [2]
        return openai_model(fake.base_url), "broke_off", fake.base_url
    fake.chunks = [" ", "\n"]
    return openai_model(fake.base_url), "empty", "only whitespace"


def test_the_participant_gets_a_plain_sentence_and_the_researcher_the_detail(failure, researcher):
    config, kind, detail = failure
    batch = make_batch(models=[config], members=[researcher])
    session, browser = participant_session(batch)
    rnd = run_pending_round(session)
    assert rnd.generation_status == Round.Generation.FAILED and detail in rnd.error  # kept for the researcher

    snapshot = browser.get(reverse("api-session", args=[session.id])).json()
    shown = snapshot["rounds"][0]
    assert shown["error_kind"] == kind and shown["error"]
    page = browser.get(reverse("session-page", args=[session.id])).content.decode()
    for text in (str(snapshot), page):
        for secret in (detail, "127.0.0.1", "Error", "http://", "Errno"):
            assert secret not in text, (secret, kind)

    research = Client()
    research.force_login(researcher)
    page = research.get(reverse("research-session", args=[batch.id, session.id])).content.decode()
    assert detail in page
    dashboard = research.get(reverse("api-batch-dashboard", args=[batch.id])).json()
    assert dashboard["model_errors"][0]["failing_now"] == 1 and detail in dashboard["model_errors"][0]["latest"]


def test_a_model_server_restarting_for_a_few_seconds_is_waited_for():
    """Connection refused for 2 s, then the server answers: the round is answered, with the default retry
    settings (3 attempts, 0.5 s backoff), which used to give up after about a second."""
    port = free_port()
    config = openai_model(f"http://127.0.0.1:{port}/v1")
    session = assignment_next(annotator=UserFactory(), batch=make_batch(models=[config])).session
    up = threading.Event()

    def restart_then_serve():
        time.sleep(2.0)
        with serving(FakeOpenAI(), port=port):
            up.set()
            time.sleep(20)

    threading.Thread(target=restart_then_serve, daemon=True).start()
    started = time.monotonic()
    rnd = run_pending_round(session)
    assert rnd.generation_status == Round.Generation.DONE, rnd.error
    assert up.is_set() and time.monotonic() - started >= 2.0


def test_a_server_that_stays_down_fails_the_round_when_the_budget_is_spent():
    port = free_port()
    config = openai_model(f"http://127.0.0.1:{port}/v1", retry_budget=1.5, backoff_base=0.1)
    session = assignment_next(annotator=UserFactory(), batch=make_batch(models=[config])).session
    started = time.monotonic()
    rnd = run_pending_round(session)
    took = time.monotonic() - started
    assert rnd.generation_status == Round.Generation.FAILED and "connection failed" in rnd.error
    assert 1.0 <= took < 5, took  # tried until the budget was spent, not three times in a blink
