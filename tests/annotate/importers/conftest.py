"""Fixtures for the importer tests: an admin persona, a private MEDIA_ROOT, and builders for import files."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from annotate.models import Batch, ImageBlob, Job, Task, TaskImage, User, WorkItem
from tests.factories import UserFactory


@pytest.fixture
def admin_user(db):
    return UserFactory(username="ada", role=User.Role.ADMIN)


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    # The personas' PBKDF2 hashing dominates these tests' setup; the hasher is not what they test.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def png(color="red", size=(16, 12), mode="RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, color).save(out, format="PNG")
    return out.getvalue()


def jpeg(color="green", size=(16, 12)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="JPEG")
    return out.getvalue()


def task(task_id: str, **fields) -> dict:
    record = {"id": task_id, "category": "Visual Logic", "question": f"Question {task_id}?",
              "options": ["one", "two", "three", "four"], "answer_type": "choice", "answer": "B",
              "images": [], "source": "tests"}
    record.update(fields)
    return record


def jsonl_bytes(records) -> bytes:
    return ("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n").encode("utf-8")


def write_zip(path: Path, records, images: dict[str, bytes] | None = None, *, tasks_name="tasks.jsonl") -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(tasks_name, jsonl_bytes(records))
        for name, data in (images or {}).items():
            archive.writestr(name, data)
    return path


def write_jsonl(path: Path, records) -> Path:
    path.write_bytes(jsonl_bytes(records))
    return path


def db_counts() -> dict[str, int]:
    """Row counts of everything an import may write: before == after means nothing was half-imported."""
    from annotate.models import Conversation, Turn

    return {model.__name__: model.objects.count()
            for model in (Batch, Task, TaskImage, ImageBlob, WorkItem, Job, Conversation, Turn)}


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
