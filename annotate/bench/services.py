"""Start, cancel and resume InterFeedback-Bench runs; one service behind the page, the API and ``run_bench``."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NotRequired, TypedDict

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotate import queue_contract
from annotate.bench.fire_engine import fire_run_prompts
from annotate.bench.prompts import PROVIDER_TEMPLATES
from annotate.errors import ApplicationError, Conflict
from annotate.models import Batch, BenchLane, BenchRun, ModelConfig, Session, Task, User
from annotate.sessions.prompts import templates_for

logger = logging.getLogger(__name__)

MAX_LANES = 64


class ModelOrder(TypedDict):
    """BenchRun.model_order: model ids in the order the run was given them."""

    receivers: list[int]
    providers: list[int]


class ModelSettings(TypedDict):
    backend: str
    generation: dict[str, object]


class RunSettings(TypedDict):
    """The part of BenchRun.prompts that records what the run's models were told and how they generate."""

    receiver: dict[str, str]
    generation: dict[str, ModelSettings]


class BenchProgress(TypedDict):
    """What bench_progress reports; FIRE runs count turns and conversations, InterFeedback runs the round-0
    answers they need (their sessions are 0 on FIRE runs)."""

    status: str
    message: str
    error: str
    model_calls: int
    sessions: int
    sessions_done: int
    lanes: int
    lanes_done: int
    turns: NotRequired[int]
    conversations: NotRequired[int]
    round0_calls_needed: NotRequired[int]


def _models(names: Sequence[str] | str, what: str) -> list[ModelConfig]:
    names = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n and n.strip()]
    if not names:
        raise ApplicationError(f"Name at least one {what} model.", code="bench_models")
    found = {m.name: m for m in ModelConfig.objects.filter(name__in=names, is_active=True)}
    missing = [n for n in dict.fromkeys(names) if n not in found]
    if missing:
        raise ApplicationError(f"No active model named {', '.join(map(repr, missing))} ({what}s).",
                               code="bench_models")
    return [found[n] for n in dict.fromkeys(names)]


def bench_run_create(*, batch: Batch, receivers: Sequence[str] | str, providers: Sequence[str] | str,
                     feedback: Sequence[str] | str = ("detail", "simple"), rounds: int = 3, lanes: int = 4,
                     provider_sees_ground_truth: bool = False, regenerate_leaks: bool = True,
                     provider_prompt: str | None = None, created_by: User | None = None,
                     human_session_id: int | None = None, dispatch: bool = True) -> BenchRun:
    """Check everything first (nothing is written on a bad request), then start the run's lanes after commit.

    With ``human_session_id`` the provider is a person: that session's feedback, round by round, is replayed to
    the receivers on its task (no provider models; feedback kind "human")."""
    if batch.kind != Batch.Kind.INTERFEEDBACK:
        raise ApplicationError(f"Batch {batch.name!r} is a {batch.get_kind_display()} batch; a bench runs on "
                               "InterFeedback tasks.", code="bench_batch")
    human = _human_session(batch, human_session_id) if human_session_id is not None else None
    if human is not None:
        feedback, providers = ["human"], []
    kinds = [k.strip() for k in (feedback.split(",") if isinstance(feedback, str) else feedback) if k.strip()]
    unknown = [k for k in kinds if k not in ("detail", "simple") and not (human and k == "human")]
    if not kinds or unknown:
        raise ApplicationError(f"Feedback kinds are detail and/or simple; got {', '.join(unknown) or 'none'}.",
                               code="bench_feedback")
    if not 1 <= int(rounds) <= 10:
        raise ApplicationError("Rounds must be 1 to 10.", code="bench_rounds")
    if not 1 <= int(lanes) <= MAX_LANES:
        raise ApplicationError(f"Lanes must be 1 to {MAX_LANES}.", code="bench_lanes")
    receiver_models = _models(receivers, "receiver")
    provider_models = _models(providers, "provider") if human is None else []
    prompts = {"provider": dict(PROVIDER_TEMPLATES)}
    if provider_prompt:
        for field in ("{question}", "{attempts}"):
            if field not in provider_prompt:
                raise ApplicationError(f"The provider prompt must contain {field}.", code="bench_prompt")
        prompts["provider"]["provider_detail"] = provider_prompt
    if not Task.objects.filter(batch=batch).exclude(answer_type=Task.AnswerType.MANUAL).exists():
        raise ApplicationError(f"Batch {batch.name!r} has no task with an automatic answer check.",
                               code="bench_batch")
    with transaction.atomic():
        run = BenchRun.objects.create(
            batch=batch, feedback_kinds=kinds, max_rounds=int(rounds), lanes=int(lanes),
            provider_sees_ground_truth=provider_sees_ground_truth, regenerate_leaks=regenerate_leaks,
            prompts={**prompts, **run_settings_snapshot(batch, [*receiver_models, *provider_models])},
            answers_key="per-model", created_by=created_by, message="Waiting for a bench worker",
            human_session=human, model_order=_model_order(receiver_models, provider_models))
        run.receivers.set(receiver_models)
        run.providers.set(provider_models)
        BenchLane.objects.bulk_create([BenchLane(run=run, lane=lane) for lane in range(run.lanes)])
        if dispatch:
            transaction.on_commit(lambda: bench_run_dispatch(run.pk))
    return run


def fire_run_create(*, batch: Batch, protocol: str, students: Sequence[str] | str, teachers: Sequence[str] | str,
                    n_max: int = 5, threshold: int = 8, baseline: str = "", lanes: int = 4,
                    ignored_ids: Sequence[str] | str = (), created_by: User | None = None,
                    dispatch: bool = True) -> BenchRun:
    """A FIRE run on an imported FIRE batch: fixed dialogues (students and/or teachers on the recorded history) or
    free dialogues (every student with every teacher). Checked first; nothing is written on a bad request.

    ``ignored_ids``: conversation ids (a list or "a,b") the run's tables leave out, as FIRE's official analysis
    skips the ids in its ``data/ignore_ids.json``; their turns are still made."""
    if protocol not in (BenchRun.Protocol.FIRE_FIXED, BenchRun.Protocol.FIRE_FREE):
        raise ApplicationError("A FIRE run is fire_fixed or fire_free.", code="fire_protocol")
    if batch.kind != Batch.Kind.FIRE:
        raise ApplicationError(f"Batch {batch.name!r} is a {batch.get_kind_display()} batch; FIRE runs need an "
                               "imported FIRE batch.", code="bench_batch")
    empty = isinstance(students, str) and not students.strip() or not students
    no_teachers = isinstance(teachers, str) and not teachers.strip() or not teachers
    if protocol == BenchRun.Protocol.FIRE_FREE and (empty or no_teachers):
        raise ApplicationError("A free dialogue needs at least one student and one teacher.", code="bench_models")
    if empty and no_teachers:
        raise ApplicationError("Name at least one student or teacher model.", code="bench_models")
    student_models = [] if empty else _models(students, "student")
    teacher_models = [] if no_teachers else _models(teachers, "teacher")
    if not 1 <= int(n_max) <= 20 or not 0 <= int(threshold) <= 10:
        raise ApplicationError("n_max is 1 to 20 and the threshold 0 to 10.", code="fire_settings")
    if baseline and baseline not in [m.name for m in student_models]:
        raise ApplicationError(f"The baseline {baseline!r} is not one of the students.", code="fire_settings")
    if not 1 <= int(lanes) <= MAX_LANES:
        raise ApplicationError(f"Lanes must be 1 to {MAX_LANES}.", code="bench_lanes")
    ignored = ignored_ids.split(",") if isinstance(ignored_ids, str) else ignored_ids
    prompts = fire_run_prompts(student_models, teacher_models)

    with transaction.atomic():
        run = BenchRun.objects.create(
            batch=batch, protocol=protocol, feedback_kinds=[], max_rounds=int(n_max), n_max=int(n_max),
            threshold=int(threshold), baseline=baseline or (student_models[0].name if student_models else ""),
            lanes=int(lanes), prompts=prompts, answers_key="per-model",
            ignored_ids=list(dict.fromkeys(i.strip() for i in ignored if i.strip())),
            model_order=_model_order(student_models, teacher_models),
            created_by=created_by, message="Waiting for a bench worker")
        run.receivers.set(student_models)
        run.providers.set(teacher_models)
        BenchLane.objects.bulk_create([BenchLane(run=run, lane=lane) for lane in range(run.lanes)])
        if dispatch:
            transaction.on_commit(lambda: bench_run_dispatch(run.pk))
    return run


def _model_order(receivers: Sequence[ModelConfig], providers: Sequence[ModelConfig]) -> ModelOrder:
    """The order the models were named in: the tables' rows and column groups (the paper's order)."""
    return {"receivers": [m.pk for m in receivers], "providers": [m.pk for m in providers]}


def run_settings_snapshot(batch: Batch, models: Sequence[ModelConfig]) -> RunSettings:
    """What the run's models are told and how they generate, as of its start: the receiver's full templates
    (defaults with the batch's overrides, which the lanes then use) and each model's backend and generation
    settings (not backend_settings: they may name servers and keys)."""
    return {"receiver": templates_for(batch.prompt_templates),
            "generation": {m.name: {"backend": m.backend, "generation": dict(m.generation or {})} for m in models}}


def _human_session(batch: Batch, session_id: int) -> Session:
    session = Session.objects.filter(pk=session_id, batch=batch, bench_run__isnull=True,
                                     annotator__isnull=False).first()
    if session is None:
        raise ApplicationError(f"No human session {session_id} in batch {batch.name!r}.", code="bench_session")
    if not session.rounds.filter(index__gte=1).exclude(feedback_text="").exists():
        raise ApplicationError(f"Session {session_id} has no feedback to replay (the model was right at once, or "
                               "no feedback was sent).", code="bench_session")
    return session


def bench_run_dispatch(run_id: int) -> int:
    """Queue every lane that is not done and not held by a live worker. Returns how many were queued."""
    now = timezone.now()
    lanes = list(BenchLane.objects.filter(run_id=run_id, done=False).filter(
        Q(lease_token="") | Q(leased_until__lt=now)).values_list("lane", flat=True))
    for lane in lanes:
        queue_contract.send_task(queue_contract.BENCH_LANE, args=[run_id, lane], queue=settings.BENCH_QUEUE)
    return len(lanes)


def bench_run_cancel(*, run: BenchRun) -> BenchRun:
    """Lanes stop at their next step; what was made is kept (and counted if the run is resumed)."""
    BenchRun.objects.filter(pk=run.pk, status__in=[BenchRun.Status.QUEUED, BenchRun.Status.RUNNING]).update(
        status=BenchRun.Status.CANCELLED, message="Cancelled", finished_at=timezone.now())
    run.refresh_from_db()
    return run


def bench_run_resume(*, run: BenchRun, dispatch: bool = True) -> BenchRun:
    """After a crash, a restart, a cancel or a failed model call: go on from what the database holds."""
    if run.status == BenchRun.Status.DONE:
        raise Conflict(f"Bench run {run.pk} is done; start a new run to change it.")
    BenchRun.objects.filter(pk=run.pk).update(status=BenchRun.Status.RUNNING, error="", finished_at=None,
                                              message="Resumed")
    if dispatch:
        transaction.on_commit(lambda: bench_run_dispatch(run.pk))
    run.refresh_from_db()
    return run


def bench_progress(run: BenchRun) -> BenchProgress:
    """What the page and the command show: calls made, sessions finished and open, lanes done."""
    sessions = Session.objects.filter(bench_run=run).aggregate(
        total=Count("pk"), done=Count("pk", filter=Q(status=Session.Status.COMPLETED)))
    lanes = BenchLane.objects.filter(run=run).aggregate(calls=Sum("calls"), done=Count("pk", filter=Q(done=True)),
                                                        total=Count("pk"))
    tasks = Task.objects.filter(batch_id=run.batch_id).exclude(answer_type=Task.AnswerType.MANUAL).count()
    models = len({*run.receivers.values_list("pk", flat=True), *run.providers.values_list("pk", flat=True)})
    if run.protocol != BenchRun.Protocol.INTERFEEDBACK:
        return {"status": run.status, "message": run.message, "error": run.error,
                "model_calls": lanes["calls"] or 0, "turns": run.fire_turns.count(),
                "conversations": run.batch.conversations.count(), "sessions": 0, "sessions_done": 0,
                "lanes": lanes["total"], "lanes_done": lanes["done"]}
    return {
        "status": run.status, "message": run.message, "error": run.error,
        "model_calls": lanes["calls"] or 0, "round0_calls_needed": tasks * models,
        "sessions": sessions["total"], "sessions_done": sessions["done"],
        "lanes": lanes["total"], "lanes_done": lanes["done"],
    }


