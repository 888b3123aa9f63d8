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
