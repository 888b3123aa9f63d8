"""How model errors end a round, against a real local OpenAI-protocol server (tests/fake_openai_server.py): a broken
stream keeps its text but is no answer, an empty answer is an error, a plain JSON answer is an answer, and the
Celery task never retries what the backend's RetryPolicy already gave up on."""

import pytest

from annotate.models import ModelConfig, Round, Session
from annotate.queue.services import assignment_next
from annotate.sessions import realtime, tasks
from annotate.sessions.services import round_retry
from tests.annotate.helpers import run_pending_round
from tests.factories import ModelConfigFactory, make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(annotator, fake):
    config = ModelConfigFactory(backend=ModelConfig.Backend.OPENAI, backend_settings={
        "base_url": fake.base_url, "model": fake.model, "max_retries": 1, "backoff_base": 0.01})
    return assignment_next(annotator=annotator, batch=make_batch(models=[config])).session


@pytest.fixture
def published(monkeypatch):
    """The chunks the page was sent, as (sequence, text)."""
    sent = []
    monkeypatch.setattr(realtime, "publish_chunk", lambda session_id, index, seq, text: sent.append((seq, text)))
    return sent


def test_an_error_after_some_chunks_keeps_the_text_for_the_researcher_but_is_not_an_answer(session, fake, published):
    fake.stream_errors = [2]

    rnd = run_pending_round(session)

    assert rnd.generation_status == Round.Generation.FAILED and session.status == Session.Status.FAILED
    assert rnd.answer_text == "The answer " == "".join(text for _, text in published)
    assert rnd.stream_seq == len(published)  # the saved text and the page's messages agree
    assert "broke off after 11 characters" in rnd.error and "error in the stream" in rnd.error
    assert (rnd.auto_verdict, rnd.final_verdict, rnd.extracted_answer) == (None, None, "")
    assert len(fake.requests) == 1

    round_retry(session_id=session.id)  # the annotator's Retry: a fresh answer replaces the broken one
    rnd = run_pending_round(session)
    assert rnd.generation_status == Round.Generation.DONE and rnd.answer_text == "The answer is B.\nAnswer: B"


@pytest.mark.parametrize("respond_as", ["sse", "json"])
def test_an_empty_answer_fails_the_round_with_retry(session, fake, respond_as):
    fake.respond_as, fake.chunks = respond_as, []

    rnd = run_pending_round(session)

    assert rnd.generation_status == Round.Generation.FAILED and session.status == Session.Status.FAILED
    assert rnd.error.startswith("The model gave an empty answer; press Retry.")
    assert rnd.answer_text == "" and rnd.final_verdict is None


def test_a_plain_json_answer_is_verified_like_a_streamed_one(session, fake):
    fake.respond_as = "json"

    rnd = run_pending_round(session)

    assert rnd.generation_status == Round.Generation.DONE
    assert rnd.answer_text == "The answer is B.\nAnswer: B" and rnd.final_verdict is False  # the task's answer is 7391
    assert (rnd.prompt_tokens, rnd.completion_tokens) == (17, 5)


def test_a_web_page_fails_the_round_naming_its_content_type(session, fake):
    fake.respond_as = "html"

    rnd = run_pending_round(session)

    assert rnd.generation_status == Round.Generation.FAILED and "content type 'text/html'" in rnd.error
    assert len(fake.requests) == 1


def test_celery_does_not_retry_what_the_backend_gave_up_on(session, fake):
    fake.failures = [(429, {"Retry-After": "0.05"})] * 10
    rnd = session.rounds.get()

    tasks.round_generate(rnd.id)  # as the worker runs it; a Celery retry would raise celery.exceptions.Retry here

    rnd.refresh_from_db()
    assert rnd.generation_status == Round.Generation.FAILED and rnd.attempts == 1
    assert len(fake.requests) == 2  # max_retries 1: the backend's two requests, and nothing after them
    assert rnd.error.startswith("The model did not answer; press Retry in a moment.")
    assert "gave up after 2 attempt(s)" in rnd.error and "429" in rnd.error
