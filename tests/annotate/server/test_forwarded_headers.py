"""A client chooses its own X-Forwarded-For: the app takes the address from it only when the connection comes from
a proxy named in TRUSTED_PROXIES. The login lockout (one username from one address) is tested against the web
server started the way docker/compose.yaml starts it (uvicorn, ASGI) and the way a split deployment's HTTP side is
started (gunicorn with annotate/config/gunicorn.py, WSGI), with spoofed addresses: 20 wrong passwords each claiming
another address lock the account, and a right password from yet another claimed address is still refused."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import httpx
import pytest
import yaml

from annotate.models import User
from tests import stack
from tests.factories import UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "the right password 42"


def compose_web_command(port: int) -> list[str]:
    """The web service's command from docker/compose.yaml, on a free local port with one worker process."""
    command = yaml.safe_load((stack.ROOT / "docker" / "compose.yaml").read_text())["services"]["web"]["command"]
    values = {"--host": "127.0.0.1", "--port": str(port), "--workers": "1"}
    command = [values.get(command[i - 1], arg) if i else arg for i, arg in enumerate(command)]
    assert command[0] == "uvicorn"
    return [sys.executable, "-m", *command]


@pytest.fixture(params=["uvicorn", "gunicorn"])
def start_web(request, stack_logs, redis_url):
    started = []

    def start(**env) -> str:
        port = stack.free_port()
        log = stack_logs / f"web-forwarded-{request.param}-{port}.log"
        command, own_env = ((compose_web_command(port), {}) if request.param == "uvicorn"
                            else stack.split_http_command(port))
        process = subprocess.Popen(command, cwd=stack.ROOT, env=stack.child_env(**own_env, **env),
                                   stdout=log.open("ab"), stderr=subprocess.STDOUT)
        started.append(process)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{url}/login/", timeout=2)
                return url
            except httpx.HTTPError:
                if process.poll() is not None:
                    break
                time.sleep(0.2)
        raise RuntimeError(f"the web server did not start; log:\n{log.read_text(errors='replace')[-3000:]}")

    yield start
    for process in started:
        stack.stop(process)


@pytest.fixture
def account():
    user = UserFactory(username="lockme", role=User.Role.RESEARCHER)
    user.set_password(PASSWORD)
    user.save()
    return user


def log_in(url: str, password: str, forwarded_for: str) -> int:
    """One login through the page, as a browser would (CSRF cookie and token); returns the answer's status."""
    with httpx.Client(base_url=url, timeout=10) as client:
        page = client.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
        answer = client.post("/login/", data={"username": "lockme", "password": password,
                                              "csrfmiddlewaretoken": token},
                             headers={"X-Forwarded-For": forwarded_for, "Referer": f"{url}/login/"})
        return answer.status_code


def test_spoofed_addresses_do_not_escape_the_lockout(start_web, account, settings):
    url = start_web()
    statuses = [log_in(url, "wrong", f"198.51.100.{i}") for i in range(20)]
    assert statuses[:settings.AXES_FAILURE_LIMIT - 1] == [200] * (settings.AXES_FAILURE_LIMIT - 1)
    assert set(statuses[settings.AXES_FAILURE_LIMIT:]) == {429}
    assert log_in(url, PASSWORD, "203.0.113.99") == 429  # locked, whatever address the client claims


def test_a_trusted_proxy_gives_the_clients_own_address(start_web, account, settings):
    """The test plays a proxy at 127.0.0.1 that appends the client's address to what the client sent."""
    url = start_web(TRUSTED_PROXIES="127.0.0.1")
    statuses = [log_in(url, "wrong", f"198.51.100.{i}, 203.0.113.7") for i in range(settings.AXES_FAILURE_LIMIT + 1)]
    assert statuses[-1] == 429  # 203.0.113.7 is locked out, whatever it put before its address
    assert log_in(url, PASSWORD, "203.0.113.7") == 429
    assert log_in(url, PASSWORD, "203.0.113.8") == 302  # another client, named by the proxy: logs in


@pytest.mark.parametrize("proxies, expected", [("10.9.9.9", 301), ("127.0.0.1", 200)])
def test_a_spoofed_scheme_is_dropped_unless_a_trusted_proxy_sent_it(start_web, proxies, expected):
    """Behind TLS (SECURE_SSL_REDIRECT, BEHIND_TLS_PROXY): a client on plain HTTP that claims X-Forwarded-Proto:
    https is still redirected to HTTPS; the same header from the trusted proxy is believed."""
    url = start_web(TRUSTED_PROXIES=proxies, SECURE_SSL_REDIRECT="1", BEHIND_TLS_PROXY="1")
    answer = httpx.get(f"{url}/login/", headers={"X-Forwarded-Proto": "https"}, timeout=10)
    assert answer.status_code == expected
    if expected == 301:
        assert answer.headers["Location"].startswith("https://")


def test_behind_tls_without_trusted_proxies_is_a_configuration_error(settings):
    from annotate.config.checks import check_deployment

    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.TRUSTED_PROXIES = ()
    assert "feedback_lab.E003" in [problem.id for problem in check_deployment(None)]
    settings.TRUSTED_PROXIES = ("172.30.0.10",)
    assert "feedback_lab.E003" not in [problem.id for problem in check_deployment(None)]


def test_compose_leaves_forwarded_headers_to_the_apps_setting():
    web = yaml.safe_load((stack.ROOT / "docker" / "compose.yaml").read_text())["services"]["web"]
    command = web["command"]
    assert "--forwarded-allow-ips" not in command and "--no-proxy-headers" in command
    assert web["environment"]["TRUSTED_PROXIES"] == "${TRUSTED_PROXIES:-}"


@pytest.mark.parametrize("bad", ["*", "proxy.example", "300.1.2.3", "10.0.0.0/33"])
def test_trusted_proxies_must_be_addresses_or_networks(bad):
    from django.core.exceptions import ImproperlyConfigured

    from annotate.server.proxies import trusted_proxies

    with pytest.raises(ImproperlyConfigured, match="TRUSTED_PROXIES"):
        trusted_proxies(["10.0.0.1", bad])
    assert trusted_proxies(["10.0.0.1", "172.30.0.0/24", "::1"]) == ("10.0.0.1", "172.30.0.0/24", "::1")
