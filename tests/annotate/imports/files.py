"""Builders for import files and a row counter, shared by the importer tests (tests generate their own data)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from PIL import Image

from annotate.models import Batch, ImageBlob, Job, Task, TaskImage, WorkItem


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


def api_import(api_client, zip_path: Path, **fields) -> Batch:
    """POST /api/imports/ with the zip and form fields (as the client's user), run its job here; the batch."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotate.imports.jobs import import_job_run

    response = api_client.post("/api/imports/", {"file": SimpleUploadedFile("t.zip", zip_path.read_bytes()),
                                                 **fields}, format="multipart")
    assert response.status_code == 202, response.json()
    import_job_run(job_id=response.json()["job_id"])
    return Batch.objects.get(name=fields["name"])
