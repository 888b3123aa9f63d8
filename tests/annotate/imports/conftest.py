"""Fixtures for the importer tests: an admin persona, a private MEDIA_ROOT, a sample zip."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotate.models import User
from tests.annotate.imports.files import jpeg, png, task, write_zip
from tests.factories import UserFactory


@pytest.fixture
def admin_user(db):
    return UserFactory(username="ada", role=User.Role.ADMIN)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def sample_zip(tmp_path) -> Path:
    """Three tasks: two share one image (stored once), one is text-only."""
    records = [
        task("vl-001", images=["images/a.png"], recorded_answers={"replay": ["Answer: C", "Answer: B"]}),
        task("vl-002", images=["images/a-copy.png", "images/b.jpg"], meta={"difficulty": "hard"}),
        task("mt-001", category="Math (Text)", options=None, answer_type="number", answer="391",
             question="What is 17 * 23?"),
    ]
    records[2].pop("options")
    return write_zip(tmp_path / "batch.zip", records,
                     {"images/a.png": png("red"), "images/a-copy.png": png("red"), "images/b.jpg": jpeg()})
