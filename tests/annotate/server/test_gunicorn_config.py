"""The split deployment's gunicorn settings (annotate/config/gunicorn.py): how many connections a process takes.

A gthread process accepts connections while it holds fewer than ``worker_connections``, busy threads or not; the
bound keeps a busy process from queueing requests that an idle one could serve. Served through a real gunicorn:
test_forwarded_headers.py."""

from __future__ import annotations

import runpy
import subprocess

import pytest
from django.core.exceptions import ImproperlyConfigured
from gunicorn.config import Config

from tests import stack

HTTP_ENV = ("WEB_HTTP_PROCESSES", "WEB_HTTP_THREADS", "WEB_HTTP_CONNECTIONS")


def settings(monkeypatch, **env) -> dict:
    """The module's settings with these variables (the others unset), each checked by gunicorn's own validator."""
    for name in HTTP_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    values = runpy.run_module("annotate.config.gunicorn")
    config = Config()
    for name in ("workers", "threads", "worker_class", "worker_connections"):
        config.set(name, values[name])
    return values


def test_a_process_takes_as_many_waiting_or_kept_alive_connections_as_it_has_threads(monkeypatch):
    values = settings(monkeypatch)
    assert (values["worker_class"], values["threads"], values["worker_connections"]) == ("gthread", 2, 4)
    assert values["worker_connections"] - values["threads"] > 0  # gunicorn keeps connections alive only then
    assert settings(monkeypatch, WEB_HTTP_THREADS="8")["worker_connections"] == 16


def test_the_bound_can_be_set_and_a_bound_that_leaves_no_kept_alive_connection_is_refused(monkeypatch):
    assert settings(monkeypatch, WEB_HTTP_CONNECTIONS="100")["worker_connections"] == 100
    with pytest.raises(ImproperlyConfigured, match=r"WEB_HTTP_CONNECTIONS must be more than WEB_HTTP_THREADS \(2\)"):
        settings(monkeypatch, WEB_HTTP_CONNECTIONS="2")
    with pytest.raises(ImproperlyConfigured, match="WEB_HTTP_CONNECTIONS must be an integer, got 'many'"):
        settings(monkeypatch, WEB_HTTP_CONNECTIONS="many")
    assert settings(monkeypatch, WEB_HTTP_THREADS="1")["worker_class"] == "sync"  # no bound to check


def test_gunicorn_refuses_to_start_with_a_bad_bound_and_says_which_variable():
    command, env = stack.split_http_command(stack.free_port())
    result = subprocess.run(command, cwd=stack.ROOT, env=stack.child_env(**env, WEB_HTTP_CONNECTIONS="1"),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "WEB_HTTP_CONNECTIONS must be more than WEB_HTTP_THREADS (2), got 1" in result.stderr
