"""The demo is served as production would be (issue 31 item 1): DEBUG off, so a wrong address shows the styled 404
page, not Django's debug page; static files are served by whitenoise; it stays safe on one machine (a secret key
generated once and kept private, only 127.0.0.1/localhost served)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import RequestFactory
from django.views import defaults

ROOT = Path(__file__).resolve().parents[2]

# Run in a process of its own with the demo's environment, as `make demo` starts every command.
PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.test import Client
client = Client(HTTP_HOST="127.0.0.1")
missing = client.get("/no-such-page/")
css = client.get("/static/css/app.css")
print(json.dumps({
    "debug": settings.DEBUG, "hosts": settings.ALLOWED_HOSTS, "key": settings.SECRET_KEY,
    "secure_cookies": settings.SESSION_COOKIE_SECURE or settings.CSRF_COOKIE_SECURE,
    "missing": [missing.status_code, missing.content.decode()],
    "css": [css.status_code, b"".join(css.streaming_content).decode()[:200] if css.status_code == 200 else ""],
    "other_host": Client(HTTP_HOST="lab.example.org").get("/login/").status_code,
}))
"""


def demo_probe(var_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG",
                                                              "ALLOWED_HOSTS", "STATIC_FROM_FINDERS")}
    env.update(FEEDBACK_LAB_DEMO="1", DEBUG="0", FEEDBACK_LAB_VAR_DIR=str(var_dir), STATIC_FROM_FINDERS="1",
               DJANGO_SETTINGS_MODULE="annotate.config.settings")
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_demo_serves_the_styled_404_and_static_files_without_debug(tmp_path):
    shown = demo_probe(tmp_path)
    assert shown["debug"] is False
    status, html = shown["missing"]
    assert status == 404
    assert "This page does not exist" in html and "Back to your work" in html and "/no-such-page/" in html
    assert "Using the URLconf" not in html and "DEBUG = True" not in html  # not Django's debug page
    assert shown["css"][0] == 200 and "--accent" in shown["css"][1]  # whitenoise serves the style sheet
    assert set(shown["hosts"]) == {"127.0.0.1", "localhost"} and shown["other_host"] == 400
    assert shown["secure_cookies"] is False  # plain HTTP on this machine: logins must work


def test_the_demo_secret_key_is_generated_once_and_private(tmp_path):
    first = demo_probe(tmp_path)["key"]
    key_file = tmp_path / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(first) >= 50 and "insecure" not in first
    assert demo_probe(tmp_path)["key"] == first  # kept: logins survive a restart
    assert demo_probe(tmp_path / "another")["key"] != first


def test_make_demo_runs_every_step_in_the_demo_configuration():
    dry_run = subprocess.run(["make", "-n", "demo", "PORT=8123"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout
    steps = [line for line in dry_run.splitlines() if "manage.py" in line]
    assert [s.split("manage.py ")[1].split()[0] for s in steps] == ["migrate", "collectstatic", "demo_setup",
                                                                   "run_demo"]
    assert all("FEEDBACK_LAB_DEMO=1" in s and "DEBUG=0" in s for s in steps)
    assert "run_demo --port 8123" in steps[-1]


@pytest.mark.django_db
def test_the_500_page_is_styled_and_needs_no_request_context():
    response = defaults.server_error(RequestFactory().get("/"))
    html = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong" in html and "app.css" in html and "Back to your work" in html
