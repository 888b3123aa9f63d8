"""Commands start fast: loading the settings, every URL (as `manage.py check` does) and the Celery app imports no
heavy library that only some pages or commands use. They are imported where a figure is drawn or a metric computed."""

import subprocess
import sys

from tests.stack import ROOT, child_env

HEAVY = {"sklearn", "matplotlib", "scipy", "statsmodels", "krippendorff", "sacrebleu", "pycocoevalcap", "twisted",
         "torch", "transformers", "pandas"}

PROBE = """
import os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotate.config.settings")
import django
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns
import annotate.config.celery
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""


def test_urls_and_the_celery_app_load_no_heavy_library():
    loaded = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=child_env(DEBUG="1"), check=True,
                            capture_output=True, text=True).stdout.split()
    assert "annotate" in loaded and "evaluation" in loaded  # the probe did load the project
    assert not HEAVY & set(loaded), sorted(HEAVY & set(loaded))
