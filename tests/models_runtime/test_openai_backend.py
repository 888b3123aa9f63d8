"""The OpenAI-compatible backend against a real local HTTP server speaking SSE (httpx is not mocked)."""

from __future__ import annotations

import base64
import socket
import time

import pytest

from models_runtime import (
    EmptyAnswerError,
    GenerationSettings,
    ImagePart,
    Message,
    ModelRequest,
    PermanentModelError,
    RetryPolicy,
    StreamBrokenError,
    TransientModelError,
)
from models_runtime.backends.openai import OpenAIBackend

FAST_RETRIES = {"backoff_base": 0.01, "max_retries": 3}


def backend_for(fake, **settings) -> OpenAIBackend:
    return OpenAIBackend({"base_url": fake.base_url, "model": fake.model, **FAST_RETRIES, **settings})


def ask(text: str = "What is in the image?", *images: bytes, **generation) -> ModelRequest:
    content = (*(ImagePart(image) for image in images), text)
    return ModelRequest(
        messages=(Message.text("system", "Answer briefly."), Message("user", content)),
        settings=GenerationSettings(**generation),
    )


def test_streams_chunks_and_reads_usage(fake_openai):
    stream = backend_for(fake_openai).stream(ask(max_new_tokens=20, temperature=0.0, seed=5, stop=["\n\n"]))

    chunks = list(stream)

    assert chunks == fake_openai.chunks
    assert stream.result.text == "The answer is B.\nAnswer: B"
    assert (stream.result.prompt_tokens, stream.result.completion_tokens) == (17, 5)
    assert stream.result.time_to_first_token is not None
    body = fake_openai.requests[0]["body"]
    assert body["model"] == "tiny-model" and body["stream"] is True
    assert (body["max_tokens"], body["temperature"], body["seed"], body["stop"]) == (20, 0.0, 5, ["\n\n"])
    assert body["messages"][0] == {"role": "system", "content": "Answer briefly."}


def test_images_are_sent_as_data_urls(fake_openai, png_bytes):
    jpeg = b"\xff\xd8\xff\xe0" + b"\x00" * 16

    backend_for(fake_openai).stream(ask("Compare them.", png_bytes, jpeg)).collect()

    parts = fake_openai.requests[0]["body"]["messages"][1]["content"]
    assert [part["type"] for part in parts] == ["image_url", "image_url", "text"]
    png_url = parts[0]["image_url"]["url"]
    assert png_url.startswith("data:image/png;base64,")
    assert base64.b64decode(png_url.split(",", 1)[1]) == png_bytes
    assert parts[1]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert parts[2] == {"type": "text", "text": "Compare them."}


def test_api_key_comes_from_the_named_env_var(fake_openai, monkeypatch):
    fake_openai.api_key = "sk-test-123"
    monkeypatch.setenv("FEEDBACK_LAB_TEST_API_KEY", "sk-test-123")
    backend = backend_for(fake_openai, api_key_env="FEEDBACK_LAB_TEST_API_KEY")

    assert backend.stream(ask()).collect().text.endswith("Answer: B")
    assert fake_openai.requests[0]["headers"]["Authorization"] == "Bearer sk-test-123"
    assert "sk-test-123" not in repr(backend.settings)

    # Read at call time: a rotated key is picked up without a new backend.
    fake_openai.api_key = "sk-rotated"
    monkeypatch.setenv("FEEDBACK_LAB_TEST_API_KEY", "sk-rotated")
    assert backend.stream(ask()).collect().text.endswith("Answer: B")


def test_bad_key_is_a_permanent_error_naming_the_variable(fake_openai, monkeypatch, caplog):
    fake_openai.api_key = "sk-right"
    monkeypatch.setenv("FEEDBACK_LAB_TEST_API_KEY", "sk-wrong")

    with pytest.raises(PermanentModelError) as error:
        backend_for(fake_openai, api_key_env="FEEDBACK_LAB_TEST_API_KEY").stream(ask()).collect()

    message = str(error.value)
    assert "401" in message and "FEEDBACK_LAB_TEST_API_KEY" in message
    # What the server said is for the worker's log, never for the error researchers read.
    assert "Incorrect API key provided." not in message and "Incorrect API key provided." in caplog.text
    assert "sk-wrong" not in message
    assert len(fake_openai.requests) == 1  # not retried


def test_missing_env_var_is_a_permanent_error(fake_openai, monkeypatch):
    monkeypatch.delenv("FEEDBACK_LAB_MISSING_API_KEY", raising=False)

    with pytest.raises(PermanentModelError, match="FEEDBACK_LAB_MISSING_API_KEY"):
        backend_for(fake_openai, api_key_env="FEEDBACK_LAB_MISSING_API_KEY").stream(ask()).collect()
    assert fake_openai.requests == []


def test_unknown_model_is_a_permanent_error(fake_openai):
    backend = OpenAIBackend({"base_url": fake_openai.base_url, "model": "no-such-model", **FAST_RETRIES})

    with pytest.raises(PermanentModelError) as error:
        backend.stream(ask()).collect()

    assert "404" in str(error.value) and "'no-such-model' served there?" in str(error.value)
    assert len(fake_openai.requests) == 1


def test_request_too_large_is_a_permanent_error(fake_openai):
    fake_openai.failures = [(413, {})]

    with pytest.raises(PermanentModelError, match="413 Request Entity Too Large") as error:
        backend_for(fake_openai).stream(ask()).collect()
    assert "simulated 413" not in str(error.value)


@pytest.mark.parametrize("status", [503, 429, 500])
def test_retries_transient_statuses_then_succeeds(fake_openai, status):
    fake_openai.failures = [(status, {}), (status, {"Retry-After": "0"})]

    result = backend_for(fake_openai).stream(ask()).collect()

    assert result.text == "The answer is B.\nAnswer: B"
    assert len(fake_openai.requests) == 3


def test_gives_up_after_max_retries_with_a_transient_error(fake_openai):
    fake_openai.failures = [(503, {})] * 5

    with pytest.raises(TransientModelError, match="3 attempt.*503"):
        backend_for(fake_openai, max_retries=2).stream(ask()).collect()
    assert len(fake_openai.requests) == 3


def test_read_timeout_is_transient(fake_openai):
    fake_openai.delay_before_response = 2.0

    with pytest.raises(TransientModelError, match="timed out"):
        backend_for(fake_openai, read_timeout=0.2, max_retries=1).stream(ask()).collect()
    assert len(fake_openai.requests) == 2  # retried once before giving up


def test_a_stream_that_stalls_after_starting_is_not_retried(fake_openai):
    fake_openai.stall_after_chunks = 2
    stream = backend_for(fake_openai, read_timeout=0.3).stream(ask())
    received = []

    with pytest.raises(StreamBrokenError, match="broke off after 11 characters.*timed out") as error:
        for chunk in stream:
            received.append(chunk)

    assert received == ["The ", "answer "]
    assert error.value.partial_text == "The answer "
    assert stream.result is None
    assert len(fake_openai.requests) == 1  # retrying would repeat text the caller has already shown


def test_connection_refused_is_transient():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again when the block ends: nothing listens there
    backend = OpenAIBackend({"base_url": f"http://127.0.0.1:{port}/v1", "model": "m", "max_retries": 1,
                             "backoff_base": 0.01, "max_backoff": 0.05, "retry_budget": 0.5})

    with pytest.raises(TransientModelError, match="budget is spent.*connection failed") as error:
        backend.stream(ask()).collect()
    assert error.value.unreached  # tried again until the budget was spent: more than max_retries + 1 times
    assert int(str(error.value).split("gave up after ")[1].split(" ")[0]) > 2


def test_extra_body_is_merged_and_none_removes_a_key(fake_openai):
    backend = backend_for(fake_openai, extra_body={"top_k": 20, "stream_options": None})

    result = backend.stream(ask()).collect()

    body = fake_openai.requests[0]["body"]
    assert body["top_k"] == 20 and "stream_options" not in body
    assert result.prompt_tokens is None  # no usage without include_usage


def test_retry_settings_make_the_backend_retry_policy():
    backend = OpenAIBackend({"base_url": "http://127.0.0.1:9/v1", "model": "m", "max_retries": 4,
                             "backoff_base": 0.25, "max_backoff": 8, "retry_budget": 45})

    assert backend.retry_policy == RetryPolicy(max_attempts=5, base_delay=0.25, max_delay=8, total_seconds=45)
    assert OpenAIBackend({"base_url": "http://x/v1", "model": "m"}).retry_policy.max_attempts == 3


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"model": "m"}, '"base_url"'),
        ({"base_url": "http://x/v1"}, '"model"'),
        ({"base_url": "127.0.0.1:8001/v1", "model": "m"}, "http://"),
        ({"base_url": "http://x/v1", "model": "m", "api_key": "sk-oops"}, "unknown openai setting"),
        ({"base_url": "http://x/v1", "model": "m", "max_retries": -1}, "max_attempts must be >= 1"),
        ({"base_url": "http://x/v1", "model": "m", "retry_budget": "soon"}, "bad openai retry setting"),
    ],
)
def test_bad_settings_are_permanent_errors(settings, message):
    with pytest.raises(PermanentModelError, match=message):
        OpenAIBackend(settings)


def test_closing_a_stream_early_drops_the_connection(fake_openai):
    fake_openai.stall_after_chunks = 1
    stream = backend_for(fake_openai, read_timeout=30).stream(ask())

    assert next(iter(stream)) == "The "
    stream.close()  # returns at once instead of waiting for the stalled server

    assert stream.result is None


# --- what a 200 may carry ------------------------------------------------------------------------------------


def test_a_plain_json_completion_is_one_chunk(fake_openai):
    fake_openai.respond_as = "json"  # a server that ignores "stream": true
    stream = backend_for(fake_openai).stream(ask())

    chunks = list(stream)

    assert chunks == ["The answer is B.\nAnswer: B"]
    assert stream.result.text == "The answer is B.\nAnswer: B"
    assert (stream.result.prompt_tokens, stream.result.completion_tokens) == (17, 5)
    assert len(fake_openai.requests) == 1


@pytest.mark.parametrize("respond_as", ["sse", "json"])
def test_an_empty_answer_is_a_model_error_not_an_answer(fake_openai, respond_as):
    fake_openai.respond_as = respond_as
    fake_openai.chunks = []

    stream = backend_for(fake_openai).stream(ask())
    with pytest.raises(EmptyAnswerError, match="'tiny-model' gave an empty answer \\(finish_reason='stop'\\)"):
        stream.collect()

    assert stream.result is None
    assert len(fake_openai.requests) == 1  # the same prompt would most likely give the same nothing


def test_a_whitespace_answer_is_empty_too(fake_openai):
    fake_openai.chunks = ["\n", "  "]

    with pytest.raises(EmptyAnswerError, match="only whitespace"):
        backend_for(fake_openai).stream(ask()).collect()


def test_a_web_page_is_a_permanent_error_naming_the_content_type(fake_openai):
    fake_openai.respond_as = "html"

    with pytest.raises(PermanentModelError, match="content type 'text/html'") as error:
        backend_for(fake_openai).stream(ask()).collect()
    assert "nginx" not in str(error.value)
    assert len(fake_openai.requests) == 1


def test_an_error_event_after_some_chunks_keeps_the_text_and_is_not_an_answer(fake_openai):
    fake_openai.stream_errors = [2]
    stream = backend_for(fake_openai).stream(ask())
    received = []

    with pytest.raises(StreamBrokenError) as error:
        for chunk in stream:
            received.append(chunk)

    assert received == ["The ", "answer "]
    assert error.value.partial_text == "The answer "
    assert "the server sent an error in the stream" in str(error.value)
    assert "CUDA out of memory" not in str(error.value)  # the server's words go to the worker's log
    assert stream.result is None
    assert len(fake_openai.requests) == 1


def test_an_error_event_before_the_first_chunk_is_retried(fake_openai):
    fake_openai.stream_errors = [0]

    result = backend_for(fake_openai).stream(ask()).collect()

    assert result.text == "The answer is B.\nAnswer: B"
    assert len(fake_openai.requests) == 2


def test_a_stream_cut_off_without_done_or_finish_reason_is_broken(fake_openai):
    fake_openai.truncate_after_chunks = 3

    with pytest.raises(StreamBrokenError, match="without \\[DONE\\] or a finish_reason") as error:
        backend_for(fake_openai).stream(ask()).collect()
    assert error.value.partial_text == "The answer is "


# --- one retry policy ----------------------------------------------------------------------------------------


def test_retry_after_is_honoured_then_jittered(fake_openai):
    fake_openai.failures = [(429, {"Retry-After": "2"})]

    result = backend_for(fake_openai).stream(ask()).collect()

    assert result.text.endswith("Answer: B")
    first, second = (request["at"] for request in fake_openai.requests)
    assert 2.0 <= second - first <= 2.0 * 1.2 + 0.5  # never earlier than asked; at most the 20 % jitter (+ slack)


def test_attempts_of_one_call_stay_within_the_budget(fake_openai):
    fake_openai.failures = [(429, {"Retry-After": "0.3"})] * 10

    with pytest.raises(TransientModelError, match="gave up after 3 attempt.*429") as error:
        backend_for(fake_openai, max_retries=2).stream(ask()).collect()

    assert len(fake_openai.requests) == 3
    assert error.value.retry_after == 0.3


def test_a_retry_after_longer_than_the_budget_left_ends_the_call_at_once(fake_openai):
    fake_openai.failures = [(429, {"Retry-After": "30"})] * 3
    started = time.monotonic()

    with pytest.raises(TransientModelError, match="asked to wait 30 s.*10 s retry budget"):
        backend_for(fake_openai, retry_budget=10).stream(ask()).collect()

    assert len(fake_openai.requests) == 1
    assert time.monotonic() - started < 5  # it did not sit out a wait it could not use


def test_a_rate_limit_window_is_waited_out(fake_openai):
    fake_openai.rate_limited_until = time.monotonic() + 1.0  # Retry-After: the seconds left, rounded up

    result = backend_for(fake_openai).stream(ask()).collect()

    assert result.text.endswith("Answer: B")
    assert len(fake_openai.requests) == 2
    assert fake_openai.requests[1]["at"] - fake_openai.requests[0]["at"] >= 1.0


def test_retry_after_as_an_http_date_is_honoured(fake_openai):
    from email.utils import formatdate

    fake_openai.failures = [(429, {"Retry-After": formatdate(time.time() + 2, usegmt=True)})]

    backend_for(fake_openai).stream(ask()).collect()

    first, second = (request["at"] for request in fake_openai.requests)
    assert second - first >= 1.0  # an HTTP date has whole seconds: 2 s ahead is at least 1 s from now
