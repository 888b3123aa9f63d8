"""The OpenAI-compatible backend against a real local HTTP server speaking SSE (httpx is not mocked)."""

from __future__ import annotations

import base64
import random
import socket

import pytest

from models_runtime import (
    GenerationSettings,
    ImagePart,
    Message,
    ModelRequest,
    PermanentModelError,
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
    monkeypatch.setenv("FEEDBACK_LAB_TEST_KEY", "sk-test-123")
    backend = backend_for(fake_openai, api_key_env="FEEDBACK_LAB_TEST_KEY")

    assert backend.stream(ask()).collect().text.endswith("Answer: B")
    assert fake_openai.requests[0]["headers"]["Authorization"] == "Bearer sk-test-123"
    assert "sk-test-123" not in repr(backend.settings)

    # Read at call time: a rotated key is picked up without a new backend.
    fake_openai.api_key = "sk-rotated"
    monkeypatch.setenv("FEEDBACK_LAB_TEST_KEY", "sk-rotated")
    assert backend.stream(ask()).collect().text.endswith("Answer: B")


def test_bad_key_is_a_permanent_error_with_the_server_message(fake_openai, monkeypatch):
    fake_openai.api_key = "sk-right"
    monkeypatch.setenv("FEEDBACK_LAB_TEST_KEY", "sk-wrong")

    with pytest.raises(PermanentModelError) as error:
        backend_for(fake_openai, api_key_env="FEEDBACK_LAB_TEST_KEY").stream(ask()).collect()

    message = str(error.value)
    assert (
        "401" in message and "Incorrect API key provided." in message and "FEEDBACK_LAB_TEST_KEY" in message
    )
    assert "sk-wrong" not in message
    assert len(fake_openai.requests) == 1  # not retried


def test_missing_env_var_is_a_permanent_error(fake_openai, monkeypatch):
    monkeypatch.delenv("FEEDBACK_LAB_MISSING_KEY", raising=False)

    with pytest.raises(PermanentModelError, match="FEEDBACK_LAB_MISSING_KEY"):
        backend_for(fake_openai, api_key_env="FEEDBACK_LAB_MISSING_KEY").stream(ask()).collect()
    assert fake_openai.requests == []


def test_unknown_model_is_a_permanent_error(fake_openai):
    backend = OpenAIBackend({"base_url": fake_openai.base_url, "model": "no-such-model", **FAST_RETRIES})

    with pytest.raises(PermanentModelError) as error:
        backend.stream(ask()).collect()

    assert "404" in str(error.value) and "`no-such-model` does not exist" in str(error.value)
    assert len(fake_openai.requests) == 1


def test_request_too_large_is_a_permanent_error(fake_openai):
    fake_openai.failures = [(413, {})]

    with pytest.raises(PermanentModelError, match="413.*simulated 413"):
        backend_for(fake_openai).stream(ask()).collect()


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

    with pytest.raises(TransientModelError, match="after it started"):
        for chunk in stream:
            received.append(chunk)

    assert received == ["The ", "answer "]
    assert len(fake_openai.requests) == 1  # retrying would repeat text the caller has already shown


def test_connection_refused_is_transient():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again when the block ends: nothing listens there
    backend = OpenAIBackend(
        {"base_url": f"http://127.0.0.1:{port}/v1", "model": "m", "max_retries": 1, "backoff_base": 0.01}
    )

    with pytest.raises(TransientModelError, match="2 attempt.*connection failed"):
        backend.stream(ask()).collect()


def test_extra_body_is_merged_and_none_removes_a_key(fake_openai):
    backend = backend_for(fake_openai, extra_body={"top_k": 20, "stream_options": None})

    result = backend.stream(ask()).collect()

    body = fake_openai.requests[0]["body"]
    assert body["top_k"] == 20 and "stream_options" not in body
    assert result.prompt_tokens is None  # no usage without include_usage


def test_backoff_is_exponential_with_full_jitter_and_honours_retry_after(monkeypatch):
    backend = OpenAIBackend({"base_url": "http://127.0.0.1:9/v1", "model": "m", "backoff_base": 0.5})
    random.seed(0)

    for attempt in range(4):
        assert all(0 <= backend._backoff(attempt, None) <= 0.5 * 2**attempt for _ in range(50))
    assert backend._backoff(0, 3.0) >= 3.0
    assert backend._backoff(0, 10_000) <= 30.0


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"model": "m"}, '"base_url"'),
        ({"base_url": "http://x/v1"}, '"model"'),
        ({"base_url": "127.0.0.1:8001/v1", "model": "m"}, "http://"),
        ({"base_url": "http://x/v1", "model": "m", "api_key": "sk-oops"}, "unknown openai setting"),
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
