"""models_runtime.outbound: which variables may hold a model's key, which hosts may serve a model."""

from __future__ import annotations

import socket

import pytest

from models_runtime import Message, ModelRequest, PermanentModelError
from models_runtime.backends.openai import OpenAIBackend
from models_runtime.outbound import api_key_env_problem, host_problem, resolved_host_problem


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "VLLM_API_KEY", "VLLM2_API_KEY", "AZURE_OPENAI_API_KEY"])
def test_model_key_variables_are_allowed(name):
    assert api_key_env_problem(name) is None


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "_API_KEY",
                                  "openai_api_key", "API_KEY", "OPENAI_API_KEY_FILE"])
def test_other_variables_are_refused(name):
    assert "_API_KEY" in api_key_env_problem(name)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "https://api.openai.com/v1", "http://vllm:8000/v1",
                                 "http://10.0.0.5/v1", "http://[::1]:8000/v1", "http://172.17.0.1/v1"])
def test_ordinary_hosts_are_allowed(url):
    assert host_problem(url) is None


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest", "http://[FE80::1%25eth0]/v1",
                                 "http://METADATA.google.internal./v1", "http://[::ffff:a9fe:a9fe]/v1"])
def test_link_local_and_metadata_hosts_are_refused(url):
    assert "link-local or cloud metadata" in host_problem(url)


def test_a_name_resolving_to_a_metadata_address_is_refused_before_any_request(monkeypatch):
    """DNS is where the outside world starts: a name under the caller's control may resolve to anything."""
    def resolve(host, port, *args, **kwargs):
        assert host == "innocent.example"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    assert "resolves to 169.254.169.254" in resolved_host_problem("http://innocent.example/v1")
    backend = OpenAIBackend({"base_url": "http://innocent.example/v1", "model": "m", "max_retries": 0})
    with pytest.raises(PermanentModelError, match="resolves to 169.254.169.254"):
        backend.stream(ModelRequest(messages=(Message.text("user", "hi"),))).collect()


def test_a_name_that_does_not_resolve_is_left_to_the_http_client(monkeypatch):
    def unknown(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    assert resolved_host_problem("http://no-such-host.invalid/v1") is None
