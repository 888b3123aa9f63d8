"""Settings from the environment: a bad value stops start-up with an error naming the variable, for every reader."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from annotate.server.env import env_float
from tests.stack import ROOT, child_env

LOAD_SETTINGS = "import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'annotate.config.settings'; " \
                "from django.conf import settings; print(settings.DASHBOARD_REFRESH_SECONDS)"


def test_env_float_reads_a_number_and_names_the_variable_on_anything_else(monkeypatch):
    monkeypatch.setenv("SOME_SECONDS", "0.5")
    assert env_float("SOME_SECONDS", 2.0) == 0.5
    monkeypatch.setenv("SOME_SECONDS", "")
    assert env_float("SOME_SECONDS", 2.0) == 2.0
    monkeypatch.delenv("SOME_SECONDS")
    assert env_float("SOME_SECONDS", 2.0) == 2.0
    for bad in ("abc", "nan", "inf"):
        monkeypatch.setenv("SOME_SECONDS", bad)
        with pytest.raises(ImproperlyConfigured, match=f"SOME_SECONDS must be a number, got '{bad}'"):
            env_float("SOME_SECONDS", 2.0)


def test_a_bad_dashboard_refresh_stops_start_up_naming_it():
    loaded = subprocess.run([sys.executable, "-c", LOAD_SETTINGS], cwd=ROOT, capture_output=True, text=True,
                            env=child_env(DASHBOARD_REFRESH_SECONDS="abc"))
    assert loaded.returncode != 0
    assert "ImproperlyConfigured: DASHBOARD_REFRESH_SECONDS must be a number, got 'abc'" in loaded.stderr


def _database_options(**env) -> subprocess.CompletedProcess:
    script = ("import os, json; os.environ['DJANGO_SETTINGS_MODULE'] = 'annotate.config.settings'; "
              "from django.conf import settings; options = settings.DATABASES['default'].get('OPTIONS', {}); "
              "print(json.dumps({k: options.get(k) for k in ('server_side_binding', 'prepare_threshold')}))")
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          env=child_env(**env))


def test_prepared_statements_are_on_for_postgresql_unless_turned_off():
    """Django's documented server-side binding, with psycopg preparing a statement after DB_PREPARE_THRESHOLD runs on
    a connection; 0 keeps client-side binding (PgBouncer in transaction mode); SQLite has neither."""
    postgres = "postgres://someone@db.example:5432/lab"
    loaded = _database_options(DATABASE_URL=postgres)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == '{"server_side_binding": true, "prepare_threshold": 5}'
    off = _database_options(DATABASE_URL=postgres, DB_PREPARE_THRESHOLD="0")
    assert off.stdout.strip() == '{"server_side_binding": null, "prepare_threshold": null}', off.stderr
    sqlite = _database_options(DATABASE_URL="sqlite:///lab.sqlite3")
    assert sqlite.stdout.strip() == '{"server_side_binding": null, "prepare_threshold": null}', sqlite.stderr
    bad = _database_options(DATABASE_URL=postgres, DB_PREPARE_THRESHOLD="-1")
    assert bad.returncode != 0
    assert "ImproperlyConfigured: DB_PREPARE_THRESHOLD must be 0 (off) or more, got -1" in bad.stderr
