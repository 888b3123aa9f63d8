"""The WSGI entry point of a split deployment's HTTP side (annotate.config.wsgi, served by gunicorn): the same
forwarded-header rule and Server-Timing as under ASGI. Through a real gunicorn: test_forwarded_headers.py."""

from __future__ import annotations

import time
from wsgiref.util import setup_testing_defaults

import pytest

from annotate.server.proxies import WsgiForwardedHeaders
from annotate.server.timing import WsgiServerTiming


def _seen_by_app(environ: dict, proxies: tuple[str, ...]) -> dict:
    """What the wrapped app finds in the environ, for a request with ``environ``'s values."""
    seen = {}

    def app(environ, start_response):
        seen.update(environ)
        start_response("200 OK", [])
        return [b""]

    setup_testing_defaults(environ)
    WsgiForwardedHeaders(app, proxies)(environ, lambda status, headers, exc_info=None: None)
    return seen


FORWARDED = {"HTTP_X_FORWARDED_FOR": "198.51.100.1, 203.0.113.7", "HTTP_X_FORWARDED_PROTO": "https",
             "HTTP_FORWARDED": "for=198.51.100.1", "HTTP_X_REAL_IP": "198.51.100.1"}


@pytest.mark.parametrize("proxies", [(), ("10.9.9.9",), ("10.0.0.0/8",)])
def test_forwarded_headers_from_anyone_else_are_dropped(proxies):
    seen = _seen_by_app({"REMOTE_ADDR": "192.0.2.5", **FORWARDED}, proxies)
    assert seen["REMOTE_ADDR"] == "192.0.2.5" and seen["wsgi.url_scheme"] == "http"
    assert not FORWARDED.keys() & seen.keys()


def test_a_trusted_proxy_names_the_client_and_the_scheme():
    seen = _seen_by_app({"REMOTE_ADDR": "172.30.0.10", **FORWARDED}, ("172.30.0.0/24",))
    # The right-most address that is not a proxy: what the client put before it (198.51.100.1) is its own claim.
    assert seen["REMOTE_ADDR"] == "203.0.113.7" and seen["wsgi.url_scheme"] == "https"


def test_behind_two_trusted_proxies_the_client_is_the_first_untrusted_hop_from_the_right():
    seen = _seen_by_app({"REMOTE_ADDR": "172.30.0.10",
                         "HTTP_X_FORWARDED_FOR": "198.51.100.1, 203.0.113.7, 172.30.0.11"}, ("172.30.0.0/24",))
    assert seen["REMOTE_ADDR"] == "203.0.113.7"


def test_a_client_entry_that_is_not_an_address_is_not_believed():
    seen = _seen_by_app({"REMOTE_ADDR": "172.30.0.10", "HTTP_X_FORWARDED_FOR": "203.0.113.7, unknown"},
                        ("172.30.0.10",))
    assert seen["REMOTE_ADDR"] == "172.30.0.10"  # what is left of the bad entry is the client's own claim


def test_a_trusted_proxy_without_forwarded_headers_leaves_the_request_as_it_came():
    seen = _seen_by_app({"REMOTE_ADDR": "172.30.0.10", "HTTP_X_FORWARDED_PROTO": "gopher"}, ("172.30.0.10",))
    assert seen["REMOTE_ADDR"] == "172.30.0.10" and seen["wsgi.url_scheme"] == "http"


def test_each_response_carries_the_apps_time():
    def app(environ, start_response):
        time.sleep(0.02)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    started = []
    body = WsgiServerTiming(app)({}, lambda status, headers, exc_info=None: started.append((status, headers)))
    status, headers = started[0]
    assert status == "200 OK" and body == [b"ok"]
    assert headers[0] == ("Content-Type", "text/plain")  # the app's own headers are kept
    name, _, duration = dict(headers)["Server-Timing"].partition(";dur=")
    assert name == "app" and float(duration) >= 20


@pytest.mark.django_db
def test_with_detail_the_header_also_gives_the_requests_cpu_and_its_queries():
    """SERVER_TIMING_DETAIL (benchmarks only): the request thread's CPU and its queries, counted where Django runs
    them (connection.execute_wrapper), not BEGIN or COMMIT."""
    from annotate.models import User

    def app(environ, start_response):
        User.objects.count()
        list(User.objects.filter(username="nobody"))
        sum(range(200_000))  # some CPU
        start_response("200 OK", [])
        return [b""]

    started = []
    WsgiServerTiming(app, detail=True)({}, lambda status, headers, exc_info=None: started.append(headers))
    metrics = {part.split(";")[0]: part for part in dict(started[0])["Server-Timing"].split(", ")}
    assert set(metrics) == {"app", "cpu", "db"}
    assert float(metrics["cpu"].partition("dur=")[2]) > 0
    assert metrics["db"].endswith('desc="2 queries"')


def test_without_detail_the_header_says_only_the_apps_time():
    """Off by default: a count of queries could tell a participant an attention check from an ordinary item."""
    from django.conf import settings

    started = []
    WsgiServerTiming(lambda environ, start_response: start_response("200 OK", []) or [b""])(
        {}, lambda status, headers, exc_info=None: started.append(headers))
    assert settings.SERVER_TIMING_DETAIL is False
    assert dict(started[0])["Server-Timing"].startswith("app;dur=") and "," not in dict(started[0])["Server-Timing"]


@pytest.mark.django_db
def test_the_entry_point_serves_the_app_with_both_wrappers():
    from annotate.config.wsgi import application

    started = []
    environ = {"REMOTE_ADDR": "192.0.2.5", "PATH_INFO": "/login/", "HTTP_X_FORWARDED_FOR": "203.0.113.7",
               "SERVER_NAME": "localhost"}
    setup_testing_defaults(environ)
    body = b"".join(application(environ, lambda status, headers, exc_info=None: started.append((status, headers))))
    status, headers = started[0]
    assert status.startswith("200") and "Server-Timing" in dict(headers)
    assert b"csrfmiddlewaretoken" in body
