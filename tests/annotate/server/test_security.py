"""Security settings a deployment relies on: CSP without inline scripts, login throttling (django-axes), HSTS and
the SSL redirect behind TLS, and Django's deployment checks with the documented production values."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from tests.factories import UserFactory

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.django_db
def test_every_page_sends_a_csp_without_inline_scripts(client, annotator):
    client.force_login(annotator)
    policy = client.get("/").headers["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["script-src"] == "'self'"
    assert "'unsafe-inline'" not in directives["script-src"] and "'unsafe-eval'" not in directives["script-src"]
    assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"


def test_no_template_has_an_inline_script_or_handler():
    offenders = []
    for template in (ROOT / "templates").rglob("*.html"):
        text = template.read_text()
        for marker in ("<script>", "onclick=", "onsubmit=", "onchange=", "onload=", "javascript:"):
            if marker in text:
                offenders.append(f"{template.relative_to(ROOT)}: {marker}")
    assert not offenders, offenders


@pytest.mark.django_db
def test_the_api_docs_load_their_script_as_a_file(client, annotator):
    client.force_login(annotator)
    page = client.get("/api/docs/").content.decode()
    assert "<script src=" in page and "<script>" not in page


@pytest.mark.django_db
def test_repeated_failed_logins_lock_the_account_with_a_clear_page(client, settings):
    settings.AXES_FAILURE_LIMIT = 3
    user = UserFactory(username="lena")
    for _ in range(3):
        response = client.post("/login/", {"username": "lena", "password": "wrong"})
    response = client.post("/login/", {"username": "lena", "password": "pw-for-tests"})  # right, but locked
    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode()
    other = client.post("/login/", {"username": "someone-else", "password": "wrong"})
    assert other.status_code == 200  # another username from the same address is not locked
    # The API's token auth is not a login form: it keeps working for the locked user's scripts.
    token = Token.objects.create(user=user)
    assert client.get("/api/batches/", HTTP_AUTHORIZATION=f"Token {token.key}").status_code in (200, 403)


@pytest.mark.django_db
def test_a_good_login_resets_the_count(client, settings):
    settings.AXES_FAILURE_LIMIT = 3
    UserFactory(username="mira")
    for _ in range(2):
        client.post("/login/", {"username": "mira", "password": "wrong"})
    assert client.post("/login/", {"username": "mira", "password": "pw-for-tests"}).status_code == 302
    client.logout()
    for _ in range(2):
        client.post("/login/", {"username": "mira", "password": "wrong"})
    assert client.post("/login/", {"username": "mira", "password": "pw-for-tests"}).status_code == 302


def test_deploy_checks_pass_with_the_documented_production_settings(tmp_path):
    env = {**os.environ, "DEBUG": "0", "SECRET_KEY": "x" * 60 + "-a-long-random-production-secret-key",
           "ALLOWED_HOSTS": "lab.example.org", "SECURE_SSL_REDIRECT": "1", "SECURE_HSTS_SECONDS": "31536000",
           "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1", "SECURE_HSTS_PRELOAD": "1", "BEHIND_TLS_PROXY": "1",
           "TRUSTED_PROXIES": "172.30.0.10",
           "SESSION_COOKIE_SECURE": "1", "CSRF_COOKIE_SECURE": "1", "FEEDBACK_LAB_VAR_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=ROOT, env=env, capture_output=True, text=True)
    problems = [line for line in result.stdout.splitlines() + result.stderr.splitlines()
                if "security." in line or "feedback_lab.E" in line]
    assert not problems, result.stdout + result.stderr
