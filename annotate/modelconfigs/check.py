"""The "Test this model" check: one short prompt with a small generated image, sent through models_runtime.

The web side only writes a Job row (kind ``model_check``) and queues it on the config's model queue, so the
check runs on the very worker that serves that model (same GPU, same server URL, same environment variables).
The ``check_model`` management command runs the same call in-process, for a shell on a GPU box.
"""

from __future__ import annotations

import io
import logging
import os
import socket
import time

from django.db import transaction
from django.utils import timezone

from annotate import queue_contract
from annotate.models import Job, ModelConfig
from models_runtime import GenerationSettings, ImagePart, Message, ModelError, ModelRequest, TaskContext
from models_runtime.registry import get_backend

logger = logging.getLogger(__name__)

CHECK_QUESTION = "What colour is the square in this image? Answer in a few words."
CHECK_QUESTION_TEXT_ONLY = "What colour is the sky on a clear day? Answer in a few words."
CHECK_MAX_NEW_TOKENS = 32  # a check, not an essay: keeps it quick even on a slow CPU
# What the offline backends (simulated, replay) answer from; real models never see it.
CHECK_CONTEXT = TaskContext(
    task_id="model-check", answer_type="text", ground_truth="red", recorded_answers=("The square is red.\nAnswer: red",)
)
# After this long in the queue the page suggests that no worker consumes the model's queue.


def check_image_png() -> bytes:
    """A red square on white, drawn here: the check needs no file, no network and no task."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (64, 64), "white")
    ImageDraw.Draw(image).rectangle((16, 16, 47, 47), fill=(220, 30, 30))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def check_request(*, config: ModelConfig, with_image: bool = True) -> ModelRequest:
    generation = dict(config.generation or {})
    generation["max_new_tokens"] = min(int(generation.get("max_new_tokens") or CHECK_MAX_NEW_TOKENS),
                                       CHECK_MAX_NEW_TOKENS)
    if with_image:
        content = (ImagePart(check_image_png()), CHECK_QUESTION)
    else:
        content = (CHECK_QUESTION_TEXT_ONLY,)
    return ModelRequest(
        messages=(Message(role="user", content=content),),
        settings=GenerationSettings.from_dict(generation),  # bad settings fail the check with their name
        context=CHECK_CONTEXT,
    )


def model_check_execute(*, config: ModelConfig, with_image: bool = True) -> dict:
    """Call the model once in this process and return the report. Raises ModelError on failure.

    The first call of a worker also loads the model (``load_ms``); TTFT and latency are the backend's own.
    """
    request = check_request(config=config, with_image=with_image)
    started = time.perf_counter()
    backend = get_backend(config.backend, config.backend_settings)
    load_ms = round((time.perf_counter() - started) * 1000)
    result = backend.stream(request).collect()
    report = {
        "model": config.name,
        "backend": config.backend,
        "simulated": config.is_simulated,
        "with_image": with_image,
        "prompt": request.messages[0].text_content,
        "answer": result.text,
        "time_to_first_token_ms": _ms(result.time_to_first_token),
        "latency_ms": _ms(result.latency),
        "load_ms": load_ms,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }
    # Where a local checkpoint runs (transformers): the first thing to look at on a GPU box, with whether its
    # decoding is compiled and what compiling took when it loaded.
    for attribute in ("device", "dtype", "compiled_decoding"):
        value = getattr(backend, attribute, None)
        if value is not None:
            report[attribute] = str(value)
    warm_up = getattr(backend, "warm_up", None)
    if warm_up is not None:
        report["warm_up_ms"] = round(warm_up.seconds * 1000)
    return report


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)


# --- the job ---------------------------------------------------------------------------------------------


def model_config_check(*, config: ModelConfig, created_by=None, with_image: bool = True) -> Job:
    """Queue a check of ``config`` on its model queue; the Job row carries status, answer and errors."""
    job = Job.objects.create(
        kind=Job.Kind.MODEL_CHECK,
        created_by=created_by,
        params={"model_config_id": config.id, "model": config.name, "queue": config.queue_name,
                "with_image": with_image},
        message=f"Waiting for a worker on queue {config.queue_name}",
    )
    transaction.on_commit(lambda: _dispatch(job.id, config))
    return job


def _dispatch(job_id: int, config: ModelConfig) -> None:
    try:
        queue_contract.send_task(
            queue_contract.MODEL_CHECK, args=[job_id], queue=config.queue_name, soft_time_limit=config.soft_time_limit,
            time_limit=config.time_limit, retry=True, retry_policy={"max_retries": 2},
        )
    except Exception as error:  # kombu raises various connection errors; all mean "not queued"
        logger.exception("could not queue model check %s", job_id)
        model_check_fail(job_id=job_id, error=f"Could not reach the task queue: {error}")


def model_config_check_run(*, job_id: int) -> Job | None:
    """Worker side: claim the job, call the model, store the report or the model's error.

    Model errors (transient or permanent) are the check's finding, not a reason to retry: they are stored as
    the job's error at once, so the admin sees them while they look at the page.
    """
    claimed = Job.objects.filter(pk=job_id, kind=Job.Kind.MODEL_CHECK, status=Job.Status.QUEUED).update(
        status=Job.Status.RUNNING, started_at=timezone.now(), message="Calling the model"
    )
    if not claimed:
        logger.info("model check %s: nothing to do (finished or claimed elsewhere)", job_id)
        return None
    job = Job.objects.get(pk=job_id)
    config = ModelConfig.objects.filter(pk=job.params.get("model_config_id")).first()
    if config is None:
        model_check_fail(job_id=job_id, error=f"The model config {job.params.get('model')!r} no longer exists.")
    else:
        try:
            report = model_check_execute(config=config, with_image=job.params.get("with_image", True))
        except ModelError as error:
            model_check_fail(job_id=job_id, error=f"{type(error).__name__}: {error}")
        else:
            Job.objects.filter(pk=job_id, status=Job.Status.RUNNING).update(
                status=Job.Status.SUCCEEDED, progress=1.0, report=report, finished_at=timezone.now(),
                message=f"Answered in {report['latency_ms']} ms",
            )
    job.refresh_from_db()
    return job


def model_check_fail(*, job_id: int, error: str) -> None:
    Job.objects.filter(pk=job_id).exclude(status=Job.Status.SUCCEEDED).update(
        status=Job.Status.FAILED, error=error[:2000], message="Failed", finished_at=timezone.now()
    )


