"""The work of one lane of a bench run (InterFeedback §3, Fig. 2): round-0 answers, the test sets, then the
feedback rounds, in chunks, from what the database already holds.

A lane owns the tasks whose id falls in it (``task.id % run.lanes``), so no two lanes touch one session. Every step
writes its rows in one transaction and skips rows that exist, so a lane that dies anywhere is resumed by running it
again: finished rounds are never redone and no count is doubled. A lease on the lane's row keeps a second copy
(a run started twice, a message delivered again) from working beside a live one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotate.bench.fire_engine import FireLane
from annotate.bench.lanes import LaneFailed, LaneLost, LanePaused, LeasedLane, ModelReply, lane_claim
from annotate.bench.prompts import PROVIDER_TEMPLATES, attempts_text
from annotate.bench.selectors import run_providers, run_receivers
from annotate.models import BenchAnswer, BenchLane, BenchRun, ModelConfig, Round, Session, Task
from annotate.sessions.prompts import RoundTurn, conversation, format_options, round0_text, templates_for
from annotate.sessions.verification import detect_stated_answers, stated_answer_correct, verify
from models_runtime import ImagePart, Message, TaskContext

logger = logging.getLogger(__name__)

LANE_SLICE_SECONDS = 240.0  # a lane task works this long, then queues its continuation
PAUSED = "paused"
CHUNK = 250  # sessions (or round-0 answers) written per transaction


def answers_key(config: ModelConfig) -> str:
    """Round-0 answers are shared by runs whose model answers the same way: same backend, settings, generation."""
    material = json.dumps([config.backend, config.backend_settings, config.generation], sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:32]


class Lane(LeasedLane):
    """A lane of an InterFeedback-Bench run."""

    def __init__(self, run: BenchRun, lane: int, token: str, deadline: float | None = None):
        super().__init__(run, lane, token, deadline)
        self.receivers = run_receivers(run)
        self.providers = run_providers(run)
        self.models = {m.pk: m for m in [*self.receivers, *self.providers]}
        # The receiver's templates as stored at the run's start (runs from before that stored only the batch's)
        self.templates = templates_for(run.prompts.get("receiver", run.batch.prompt_templates))
        self.provider_templates = {**PROVIDER_TEMPLATES, **(run.prompts.get("provider") or {})}
        tasks = Task.objects.filter(batch=run.batch).exclude(answer_type=Task.AnswerType.MANUAL)
        self.human_feedback: list[str] = []
        if run.human_session_id:  # a person's feedback, replayed: that session's task only
            tasks = tasks.filter(pk=run.human_session.task_id)
            self.human_feedback = list(run.human_session.rounds.filter(index__gte=1).order_by("index")
                                       .values_list("feedback_text", flat=True))
        self.tasks = {t.pk: t for t in tasks.annotate(lane=F("id") % run.lanes).filter(lane=lane)
                      .prefetch_related("task_images__blob")}
        self._images: dict[int, tuple[ImagePart, ...]] = {}

    def work(self) -> None:
        answers = self.round0_answers()
        self.sessions_create(answers)
        self.rounds_run(answers)

    def images(self, task: Task) -> tuple[ImagePart, ...]:
        if task.pk not in self._images:
            self._images[task.pk] = tuple(ImagePart(ti.blob.file.open("rb").read())
                                          for ti in sorted(task.task_images.all(), key=lambda ti: ti.position))
        return self._images[task.pk]

    def context(self, task: Task, index: int, *recorded_keys: str) -> TaskContext:
        """The replay backend's view of the task: the first of ``recorded_keys`` the task has recordings for."""
        recorded_by_key = task.recorded_answers or {}
        recorded = next((recorded_by_key[k] for k in recorded_keys if recorded_by_key.get(k)), [])
        return TaskContext(task_id=task.external_id, round_index=index, answer_type=task.answer_type,
                           options=tuple(task.options or ()), ground_truth=task.ground_truth,
                           recorded_answers=tuple(recorded))

    # --- the receiver's and the provider's turns -----------------------------------------------------------------

    def answer(self, config: ModelConfig, task: Task, history: list[tuple[str, str]], feedback: str,
               kind: str = "", provider: ModelConfig | None = None) -> ModelReply:
        """The receiver's answer in round len(history), after ``feedback`` of ``kind`` from ``provider`` (round 0:
        no history, no feedback). A replay receiver plays the first the task has of
        ``recorded_answers["<receiver>:<provider>:<kind>"]`` (what it answered after that provider's feedback of
        that kind: a task in two providers' test sets may be corrected by one only),
        ``recorded_answers["<receiver>:<kind>"]`` and ``recorded_answers["<receiver>"]``."""
        turns = conversation(
            round0=round0_text(question=task.question, options=task.options, answer_type=task.answer_type,
                               templates=self.templates),
            rounds=[RoundTurn(fb, ans) for fb, ans in history] + [RoundTurn(feedback, "")],
            templates=self.templates,
        )
        images = self.images(task)
        messages = tuple(Message(role=role, content=(*images, text) if i == 0 and images else (text,))
                         for i, (role, text) in enumerate(turns))
        keys = (f"{config.name}:{kind}", config.name) if kind else (config.name,)
        if kind and provider is not None:
            keys = (f"{config.name}:{provider.name}:{kind}", *keys)
        return self.call(config, messages, self.context(task, len(history), *keys))

    def feedback(self, kind: str, provider: ModelConfig, task: Task, history: list[tuple[str, str]],
                 reference: str) -> tuple[str, ModelReply | None, list, int]:
        """(feedback text, the provider's reply, stated answers it contains, model calls made). Simple feedback
        calls no model. Detail feedback that states an answer is asked for once more when the run says so; a
        replay provider plays ``recorded_answers["<provider>:feedback:again"]`` then (its feedback asked once
        more), since the same recording would give the same text."""
        if kind == BenchRun.Feedback.SIMPLE:
            return self.provider_templates["simple_feedback"], None, [], 0
        if kind == BenchRun.Feedback.HUMAN:
            return self.human_feedback[len(history) - 1], None, [], 0
        prompt = self.provider_templates["provider_detail"].format(
            question=task.question.strip(), options=format_options(task.options) if task.options else "",
            attempts=attempts_text(history),
            reference=task.ground_truth if self.run.provider_sees_ground_truth else reference,
        )
        images = self.images(task)
        messages = (Message(role="user", content=(*images, prompt) if images else (prompt,)),)
        recorded = f"{provider.name}:feedback"
        reply = self.call(provider, messages, self.context(task, len(history) - 1, recorded))
        stated = detect_stated_answers(reply.text, task.answer_type, task.options or ())
        if not (stated and self.run.regenerate_leaks and not reply.error):
            return reply.text, reply, stated, 1
        # once: feedback that states the answer inflates the rates
        again = self.call(provider, messages, self.context(task, len(history) - 1, f"{recorded}:again", recorded))
        again_stated = detect_stated_answers(again.text, task.answer_type, task.options or ())
        if not again.error and len(again_stated) < len(stated):
            reply, stated = again, again_stated
        return reply.text, reply, stated, 2

    # --- the three steps -----------------------------------------------------------------------------------------

    def round0_answers(self) -> dict[tuple[int, int], BenchAnswer]:
        """Every model's round-0 answer to every task of the lane, made once and reused."""
        keys = {pk: answers_key(m) for pk, m in self.models.items()}
        have = {(a.task_id, a.model_config_id): a for a in BenchAnswer.objects.filter(
            task_id__in=self.tasks, model_config_id__in=self.models,
        ) if a.answers_key == keys[a.model_config_id]}
        missing = [(t, m) for t in self.tasks for m in self.models if (t, m) not in have]
        for start in range(0, len(missing), CHUNK):
            made, failure = [], ""
            for task_id, model_id in missing[start:start + CHUNK]:
                task, config = self.tasks[task_id], self.models[model_id]
                reply = self.answer(config, task, [], "")
                if reply.error:
                    failure = f"{config.label} failed on task {task.external_id} (round 0): {reply.error}"
                    break
                checked = verify(task.answer_type, reply.text, task.ground_truth, task.options or ())
                made.append(BenchAnswer(
                    task=task, model_config=config, answers_key=keys[model_id], answer_text=reply.text,
                    extracted_answer=checked.extracted[:500], verdict=bool(checked.verdict),
                    prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                    latency_ms=reply.latency_ms))
            with transaction.atomic():
                BenchAnswer.objects.bulk_create(made, ignore_conflicts=True)
                self.renew(calls=len(made), pause=False)
            if failure:
                raise LaneFailed(failure)
            self.pause_if_due()
        for answer in BenchAnswer.objects.filter(task_id__in=self.tasks, model_config_id__in=self.models):
            if answer.answers_key == keys[answer.model_config_id]:
                have[(answer.task_id, answer.model_config_id)] = answer
        return have

    def sessions_create(self, answers: dict[tuple[int, int], BenchAnswer]) -> int:
        """One session per (receiver, provider, feedback kind, task of the pair's test set): the receiver was
        wrong at round 0 and the provider right. Round 0 is the shared answer."""
        existing = set(Session.objects.filter(bench_run=self.run, task_id__in=self.tasks).values_list(
            "model_config_id", "feedback_provider_id", "feedback_kind", "task_id"))
        planned: list[tuple[ModelConfig, ModelConfig | None, str, Task, BenchAnswer]] = []
        if self.run.human_session_id:  # every receiver that is wrong at round 0 gets the person's feedback
            for receiver in self.receivers:
                for task_id, task in self.tasks.items():
                    mine = answers.get((task_id, receiver.pk))
                    if mine and mine.verdict is False and (receiver.pk, None, "human", task_id) not in existing:
                        planned.append((receiver, None, "human", task, mine))
        for receiver in self.receivers:
            for provider in self.providers:
                for task_id, task in self.tasks.items():
                    mine, theirs = answers.get((task_id, receiver.pk)), answers.get((task_id, provider.pk))
                    if not (mine and theirs and mine.verdict is False and theirs.verdict is True):
                        continue
                    for kind in self.run.feedback_kinds:
                        if (receiver.pk, provider.pk, kind, task_id) not in existing:
                            planned.append((receiver, provider, kind, task, mine))
        for start in range(0, len(planned), CHUNK):
            chunk = planned[start:start + CHUNK]
            with transaction.atomic():
                sessions = Session.objects.bulk_create([
                    Session(batch_id=self.run.batch_id, task=task, model_config=receiver, bench_run=self.run,
                            feedback_provider=provider, feedback_kind=kind, status=Session.Status.GENERATING)
                    for receiver, provider, kind, task, _ in chunk])
                Round.objects.bulk_create([
                    Round(session=session, index=0, generation_status=Round.Generation.DONE,
                          answer_text=answer.answer_text, extracted_answer=answer.extracted_answer,
                          auto_verdict=False, final_verdict=False, verdict_source=Round.VerdictSource.AUTO,
                          finished_at=timezone.now())
                    for session, (*_, answer) in zip(sessions, chunk, strict=True)])
                self.renew(pause=False)
            self.pause_if_due()
        return len(planned)

    def rounds_run(self, answers: dict[tuple[int, int], BenchAnswer]) -> None:
        """Feedback and a new answer, round after round, for the lane's unfinished sessions, a chunk at a time."""
        open_ids = list(Session.objects.filter(bench_run=self.run, task_id__in=self.tasks)
                        .exclude(status=Session.Status.COMPLETED).order_by("pk").values_list("pk", flat=True))
        for start in range(0, len(open_ids), CHUNK):
            sessions = list(Session.objects.filter(pk__in=open_ids[start:start + CHUNK])
                            .select_related("model_config", "feedback_provider"))
            history: dict[int, list[Round]] = {s.pk: [] for s in sessions}
            for rnd in Round.objects.filter(session__in=sessions).order_by("index"):
                history[rnd.session_id].append(rnd)
            last = min(self.run.max_rounds, len(self.human_feedback)) if self.run.human_session_id \
                else self.run.max_rounds
            for index in range(1, last + 1):
                due = [s for s in sessions if s.status != Session.Status.COMPLETED and len(history[s.pk]) == index]
                if due:
                    self._round_step(due, index, history, answers)

    def _round_step(self, sessions: list[Session], index: int, history: dict[int, list[Round]],
                    answers: dict[tuple[int, int], BenchAnswer]) -> None:
        rounds, finished, calls, failure = [], [], 0, ""
        for session in sessions:
            task = self.tasks[session.task_id]
            past = [(r.feedback_text, r.answer_text) for r in history[session.pk]]
            provider_answer = answers.get((task.pk, session.feedback_provider_id))
            reference = provider_answer.answer_text if provider_answer else ""
            text, provider_reply, stated, provider_calls = self.feedback(
                session.feedback_kind, session.feedback_provider, task, past, reference)
            calls += provider_calls
            if provider_reply is not None and provider_reply.error:
                failure = f"{session.feedback_provider.label} failed giving feedback on task {task.external_id}, " \
                          f"round {index}: {provider_reply.error}"
                break
            reply = self.answer(session.model_config, task, past, text, session.feedback_kind,
                                session.feedback_provider)
            calls += 1
            if reply.error:
                failure = f"{session.model_config.label} failed on task {task.external_id}, round {index}: " \
                          f"{reply.error}"
                break
            checked = verify(task.answer_type, reply.text, task.ground_truth, task.options or ())
            correct = bool(checked.verdict)
            rnd = Round(
                session=session, index=index, feedback_text=text, feedback_to_model=text,
                feedback_kind=(Round.FeedbackKind.LMM_DETAIL if provider_reply else Round.FeedbackKind.HUMAN
                               if session.feedback_kind == BenchRun.Feedback.HUMAN else Round.FeedbackKind.LMM_SIMPLE),
                leak_flagged=bool(stated), stated_answer=", ".join(s.description for s in stated)[:200],
                stated_answer_correct=stated_answer_correct(stated, task.answer_type, task.ground_truth,
                                                            task.options or ()) if stated else None,
                generation_status=Round.Generation.DONE, answer_text=reply.text, extracted_answer=checked.extracted[:500],
                auto_verdict=correct, final_verdict=correct, verdict_source=Round.VerdictSource.AUTO,
                prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                latency_ms=reply.latency_ms, finished_at=timezone.now())
            rounds.append(rnd)
            history[session.pk].append(rnd)
            if correct or index == self.run.max_rounds or (
                    session.feedback_kind == BenchRun.Feedback.HUMAN and index >= len(self.human_feedback)):
                session.status, session.completed_at = Session.Status.COMPLETED, timezone.now()
                session.corrected_round = index if correct else None
                finished.append(session)
        with transaction.atomic():
            Round.objects.bulk_create(rounds, ignore_conflicts=True)
            Session.objects.bulk_update(finished, ["status", "completed_at", "corrected_round"])
            self.renew(calls=calls, pause=False)
        if failure:
            raise LaneFailed(failure)
        self.pause_if_due()


def lane_run(*, run_id: int, lane: int, token: str | None = None, seconds: float | None = None) -> bool | str:
    """Run one lane to its end (True), or for ``seconds`` (then PAUSED: queue it again). False when another
    worker holds it, it is done, it failed, or the run is not running."""
    token = token or uuid.uuid4().hex
    run = BenchRun.objects.select_related("batch").get(pk=run_id)
    if run.status not in (BenchRun.Status.QUEUED, BenchRun.Status.RUNNING):
        return False
    if not lane_claim(run_id=run_id, lane=lane, token=token):
        return False
    BenchRun.objects.filter(pk=run_id, status=BenchRun.Status.QUEUED).update(
        status=BenchRun.Status.RUNNING, started_at=timezone.now(), message="Running")
    deadline = time.monotonic() + seconds if seconds else None
    if run.protocol == BenchRun.Protocol.INTERFEEDBACK:
        worker: LeasedLane = Lane(run, lane, token, deadline)
    else:
        worker = FireLane(run, lane, token, deadline)
    try:
        worker.work()
    except LaneLost as stop:
        logger.info("%s", stop)
        return False
    except LanePaused:
        BenchLane.objects.filter(run_id=run_id, lane=lane, lease_token=token).update(leased_until=None,
                                                                                     lease_token="")
        return PAUSED
    except LaneFailed as failure:
        BenchLane.objects.filter(run_id=run_id, lane=lane, lease_token=token).update(leased_until=None,
                                                                                     lease_token="")
        BenchRun.objects.filter(pk=run_id, status=BenchRun.Status.RUNNING).update(
            status=BenchRun.Status.FAILED, error=str(failure)[:2000], message="Failed: resume to retry",
            finished_at=timezone.now())
        return False
    BenchLane.objects.filter(run_id=run_id, lane=lane, lease_token=token).update(done=True, leased_until=None)
    run_finish_if_done(run_id)
    return True


def run_finish_if_done(run_id: int) -> None:
    if not BenchLane.objects.filter(run_id=run_id, done=False).exists():
        BenchRun.objects.filter(pk=run_id, status__in=[BenchRun.Status.QUEUED, BenchRun.Status.RUNNING]).update(
            status=BenchRun.Status.DONE, finished_at=timezone.now(), message="Done")
