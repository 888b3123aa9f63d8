"""A model with several endpoints (vLLM replicas, API keys, regions): calls are spread over the endpoints that are
up, and one that fails is left out while the call's retry goes at once to another. Two real local servers."""

from __future__ import annotations

import time

import pytest

from models_runtime import GenerationSettings, Message, ModelRequest, PermanentModelError, TransientModelError
from models_runtime.backends.openai import OpenAIBackend
from tests.fake_openai_server import serving

FAST = {"backoff_base": 0.01, "max_retries": 2}


def ask() -> ModelRequest:
    return ModelRequest(messages=(Message.text("user", "2+2?"),), settings=GenerationSettings(max_new_tokens=8))


def answered(backend: OpenAIBackend) -> bool:
    return backend.stream(ask()).collect().text == "The answer is B.\nAnswer: B"


@pytest.fixture
def two_servers():
    with serving() as first, serving() as second:
        yield first, second


def backend_over(*fakes, **settings) -> OpenAIBackend:
    return OpenAIBackend({"model": "tiny-model", "endpoints": [{"base_url": f.base_url} for f in fakes],
                          **FAST, **settings})


def test_calls_are_spread_over_the_endpoints(two_servers):
    first, second = two_servers
    backend = backend_over(first, second)
    for _ in range(6):
        assert backend.stream(ask()).collect().text == "The answer is B.\nAnswer: B"
    assert len(first.requests) == len(second.requests) == 3


def test_a_failing_endpoint_is_left_out_and_the_retry_goes_to_the_other_at_once(two_servers):
    first, second = two_servers
    first.failures = [(503, {})] * 100  # down for the whole test
    backend = backend_over(first, second, endpoint_cooldown=60)
    began = time.monotonic()
    answers = [backend.stream(ask()).collect().text for _ in range(5)]
    assert answers == ["The answer is B.\nAnswer: B"] * 5
    assert len(first.requests) == 1  # tried once, then left out for its cooldown
    assert len(second.requests) == 5
    assert time.monotonic() - began < 2  # no backoff wait spent on the way


def test_retry_after_of_an_endpoint_sets_how_long_it_is_left_out(two_servers):
    first, second = two_servers
    first.failures = [(429, {"Retry-After": "0.3"})]
    backend = backend_over(first, second, endpoint_cooldown=60)
    assert answered(backend)  # first: 429 (left out for 0.3 s), answered by second
    assert answered(backend)  # second again: first is still out
    assert (len(first.requests), len(second.requests)) == (1, 2)
    time.sleep(0.35)
    assert answered(backend)
    assert answered(backend)
    assert len(first.requests) == 2  # back in the rotation after its Retry-After


def test_when_every_endpoint_fails_the_call_fails_with_both_reasons(two_servers):
    first, second = two_servers
    first.failures = [(503, {})] * 10
    second.failures = [(502, {})] * 10
    with pytest.raises(TransientModelError) as error:
        answered(backend_over(first, second))
    assert "gave up after 3 attempt(s)" in str(error.value)
    assert len(first.requests) + len(second.requests) == 3


def test_each_endpoint_sends_its_own_key(two_servers, monkeypatch):
    first, second = two_servers
    first.api_key, second.api_key = "key-one", "key-two"
    monkeypatch.setenv("ONE_API_KEY", "key-one")
    monkeypatch.setenv("TWO_API_KEY", "key-two")
    backend = OpenAIBackend({"model": "tiny-model", **FAST, "endpoints": [
        {"base_url": first.base_url, "api_key_env": "ONE_API_KEY"},
        {"base_url": second.base_url, "api_key_env": "TWO_API_KEY"}]})
    assert answered(backend)
    assert answered(backend)
    assert first.requests[0]["headers"]["Authorization"] == "Bearer key-one"
    assert second.requests[0]["headers"]["Authorization"] == "Bearer key-two"


@pytest.mark.parametrize(("settings", "message"), [
    ({"base_url": "http://x/v1", "endpoints": [{"base_url": "http://y/v1"}]}, "not both"),
    ({"endpoints": "http://y/v1"}, "must be a list"),
    ({"endpoints": [{"base_url": "y/v1"}]}, "endpoints[0].base_url must start with http://"),
    ({"endpoints": [{"base_url": "http://y/v1", "key": "sk-1"}]}, "endpoints[0]: unknown key(s) key"),
    ({"endpoints": [{"base_url": "http://y/v1"}], "endpoint_cooldown": -1}, "endpoint_cooldown must be >= 0"),
])
def test_bad_endpoint_settings_name_what_is_wrong(settings, message):
    with pytest.raises(PermanentModelError) as error:
        OpenAIBackend({"model": "m", **settings})
    assert message in str(error.value)
