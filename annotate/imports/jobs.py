"""The import job behind the upload page and the API: keep the upload, queue a Celery task on commit, run
``batch_import`` in the worker with progress on the Job row (status, progress, counts, report)."""

from __future__ import annotations

import logging
import shutil
import time
import uuid
from datetime import timedelta
from pathlib import Path

from django.conf import settings as django_settings
from django.core.exceptions import SuspiciousFileOperation
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import get_valid_filename

from annotate import queue_contract
from annotate.errors import ApplicationError
from annotate.importkit.common import ImportReport, Progress
from annotate.imports.batches import batch_import, batch_settings_clean
from annotate.imports.registry import IMPORTERS
from annotate.models import Batch, Job, ModelConfig, User
from annotate.sessions.importers.rows import parse_mapping

logger = logging.getLogger(__name__)

UPLOAD_DIR = "uploads"
UPLOAD_OPTIONS = ("map", "category", "rows_file")
IMAGE_UPLOAD_KINDS = ("fire", "preference")  # importers that read a separate images zip (option "images")
MAX_UPLOAD_BYTES = 4 * 1024**3
JOB_PHASES = {"read": (0.0, 0.3), "images": (0.3, 0.75), "write": (0.75, 1.0)}
PHASE_LABELS = {"read": "Checking records", "images": "Checking images", "write": "Writing to the database"}


def import_job_create(*, upload, name: str, kind: str, created_by: User, settings: dict | None = None,
                      options: dict | None = None, update: bool = False, dry_run: bool = False,
                      images=None) -> Job:
    """Check the request, keep the uploaded file (and an images zip, for FIRE-style batches) under
    MEDIA_ROOT/uploads and queue the import after commit.

    Settings and the column map are checked here so a typo is a 400 at once, not a failed job later.
    """
    if kind not in IMPORTERS:
        raise ApplicationError(f"Unknown import kind {kind!r}; choose one of {', '.join(sorted(IMPORTERS))}.")
    report = ImportReport(kind=kind, batch=name)
    if not (name or "").strip() or len(name.strip()) > 128:
        report.add(None, "name", "a batch name of 1 to 128 characters is required")
    size = getattr(upload, "size", None) or 0
    if size == 0:
        report.add(None, "file", "the uploaded file is empty")
    elif size > MAX_UPLOAD_BYTES:
        report.add(None, "file", f"the upload is {size:,} bytes; at most {MAX_UPLOAD_BYTES:,} are allowed")
    if images is not None:
        if kind not in IMAGE_UPLOAD_KINDS:
            report.add(None, "images", f"a separate images zip is read for {' and '.join(IMAGE_UPLOAD_KINDS)} "
                       f"batches; for {kind} put the images in the same zip as the records")
        elif not (images.name or "").lower().endswith(".zip") or not (getattr(images, "size", 0) or 0):
            report.add(None, "images", f"{images.name!r} is not a zip: upload the images as one .zip file")
    batch_settings_clean(settings, report)
    # Uploads may not point the importer at server paths (images_dir): only these options pass.
    options = {k: v for k, v in (options or {}).items() if k in UPLOAD_OPTIONS and v not in (None, "")}
    if kind == "rows":
        for error in parse_mapping(options.get("map"))[1]:
            report.add(None, "map", error)
    if not report.ok:
        raise ApplicationError("; ".join(str(p) for p in report.problems),
                               extra={"problems": [p.as_dict() for p in report.problems]})
    folder = Path(django_settings.MEDIA_ROOT) / UPLOAD_DIR / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=True)
    target = _keep(upload, folder / _safe_name(upload.name))
    if images is not None:
        options["images"] = str(_keep(images, folder / ("images-" + _safe_name(images.name))))
        options["images_filename"] = images.name
    params = {"path": str(target), "name": name.strip(), "kind": kind, "settings": _jsonable(settings or {}),
              "options": options, "update": update, "dry_run": dry_run, "filename": upload.name}
    with transaction.atomic():
        job = Job.objects.create(kind=Job.Kind.IMPORT, params=params, created_by=created_by,
                                 message="Waiting for a worker")
        transaction.on_commit(lambda: import_job_dispatch(job.pk))
    return job


def _keep(upload, target: Path) -> Path:
    with open(target, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return target


def _safe_name(name: str | None) -> str:
    """Keep the suffix (it selects the format) but nothing that could leave the folder."""
    try:
        return get_valid_filename(Path(name or "upload").name) or "upload"
    except SuspiciousFileOperation:
        return "upload"


def _jsonable(settings: dict) -> dict:
    return {k: [m.name if isinstance(m, ModelConfig) else m for m in v] if isinstance(v, list) else v
            for k, v in settings.items()}


def import_job_dispatch(job_id: int) -> None:
    """Queue the job; when the broker is down, say so on the job instead of running it in the web request."""
    try:
        queue_contract.send_task(queue_contract.BATCH_IMPORT, args=[job_id])
    except Exception as error:  # kombu/redis raise several types for an unreachable broker
        logger.exception("could not queue import job %s", job_id)
        Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(
            status=Job.Status.FAILED, finished_at=timezone.now(),
            error=f"The import could not be queued (is the worker's broker running?): {error}")


def _job_progress(job_id: int) -> Progress:
    last = [0.0]
    depth = len(connection.atomic_blocks)

    def report_progress(phase: str, done: int, total: int) -> None:
        low, high = JOB_PHASES.get(phase, (0.0, 1.0))
        now = time.monotonic()
        # Inside the import's own transaction nobody else could see the update; elsewhere twice a second.
        if len(connection.atomic_blocks) > depth or (now - last[0] < 0.5 and done < total):
            return
        last[0] = now
        label = PHASE_LABELS.get(phase, phase)
        Job.objects.filter(pk=job_id).update(
            progress=round(low + (high - low) * (done / total if total else 0.0), 3),
            message=f"{label}: {done:,} of {total:,}" if total else label,
        )

    return report_progress


def import_job_run(*, job_id: int, stale_after_s: int | None = None) -> Job | None:
    """Claim and run an import job. A job another worker already holds is left alone (returns None)."""
    stale_after_s = stale_after_s or django_settings.CELERY_TASK_TIME_LIMIT
    now = timezone.now()
    # A RUNNING job older than the hard time limit belongs to a worker that died: take it over.
    claimable = Q(status=Job.Status.QUEUED) | Q(
        status=Job.Status.RUNNING, started_at__lt=now - timedelta(seconds=stale_after_s))
    claimed = Job.objects.filter(claimable, pk=job_id, kind=Job.Kind.IMPORT).update(
        status=Job.Status.RUNNING, started_at=now, message="Reading the file")
    if not claimed:
        return None
    job = Job.objects.get(pk=job_id)
    params = job.params
    try:
        report = batch_import(path=params["path"], name=params["name"], kind=params["kind"],
                              dry_run=params.get("dry_run", False), update=params.get("update", False),
                              settings=params.get("settings"), options=params.get("options"),
                              progress=_job_progress(job_id), created_by=job.created_by)
    except Exception as error:
        logger.exception("import job %s failed", job_id)
        job.status, job.error, job.message = Job.Status.FAILED, f"Unexpected error: {error}", "Failed"
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "error", "message", "finished_at"])
        raise
    finally:
        _upload_remove(Path(params["path"]))
    job.report = _without_server_paths(report.as_dict(), params)
    job.status = Job.Status.SUCCEEDED if report.ok else Job.Status.FAILED
    job.error = "" if report.ok else report.summary()
    job.message = report.summary()
    job.progress = 1.0
    job.batch = Batch.objects.filter(name=params["name"]).first()
    job.finished_at = timezone.now()
    job.save()
    return job


def _without_server_paths(report: dict, params: dict) -> dict:
    """An upload's report names the files the person uploaded, never where the server kept them; a missing image
    says what to upload."""
    options = params.get("options") or {}
    names = {params["path"]: params.get("filename") or "the upload"}
    if options.get("images"):
        names[options["images"]] = options.get("images_filename") or "the images zip"
    folder = str(Path(params["path"]).parent)

    def hide(text):
        if not isinstance(text, str):
            return text
        for path, name in names.items():
            text = text.replace(path, name)
        return text.replace(folder + "/", "").replace(folder, "the upload")

    problems = [{key: hide(value) for key, value in problem.items()} for problem in report.get("problems", [])]
    if not options.get("images") and any(p.get("field") == "image" for p in problems):
        hint = ("images are missing: upload the images zip in the Images field (API: `images`) together with the "
                "records file, or one zip holding both")
        problems.append({"line": None, "field": "images", "message": hint, "text": f"images: {hint}"})
    return {**report, "problems": problems}


def _upload_remove(path: Path) -> None:
    """The upload's own folder goes once the job is over (the report is kept); nothing outside uploads/."""
    folder = path.parent
    if folder.parent == Path(django_settings.MEDIA_ROOT) / UPLOAD_DIR:
        shutil.rmtree(folder, ignore_errors=True)

