"""Reads of sessions and rounds, with the permission check that goes with them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NotRequired, TypedDict

from django.db.models import Count, Prefetch, Q, QuerySet
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotate.errors import NotFound
from annotate.models import Assignment, Batch, Round, Session, Task, TaskImage, User
from annotate.server import compiled_reads
from annotate.sessions.failures import failure_kind, failure_plain_message
from annotate.shares import counted_skips, is_participant_of


class RoundPayload(TypedDict):
    """A round as the annotator's page shows it (round_payload)."""

    index: int
    feedback_text: str
    feedback_kind: str
    leak_flagged: bool
    generation_status: str
    answer_text: str
    stream_seq: int
    extracted_answer: str
    verdict: bool | None
    verdict_source: str
    error: str
    error_kind: str
    latency_ms: int | None
    first_token_ms: int | None


class TaskFields(TypedDict):
    """What a task is, without its ground truth nor the researchers' id for it (task_fields)."""

    category: str
    question: str
    options: list[str]
    answer_type: str


class SnapshotTask(TaskFields):
    images: list[str]


class SnapshotModel(TypedDict):
    name: str
    label: str
    simulated: bool


class SessionSnapshot(TypedDict):
    """Everything the annotator's page shows (session_snapshot). The ground truth is there only once revealed;
    a manual task's reference, to judge against, before that."""

    id: int
    status: str
    corrected_round: int | None
    max_rounds: int
    model: SnapshotModel
    task: SnapshotTask
    rounds: list[RoundPayload]
    next_round: int | None
    feedback_draft: str
    ground_truth_revealed: bool
    ended_as: NotRequired[str]
    finished_at: NotRequired[str | None]  # when a finished session ended (the page stops its timer there)
    ground_truth: NotRequired[str]
    judging_reference: NotRequired[str]


class ItemProgress(TypedDict):
    number: int
    share: int | None
    last_of_share: bool


class KindProgress(TypedDict):
    label: str | Promise
    completed: int
    in_progress: int


class AnnotatorProgress(TypedDict):
    completed: int
    in_progress: int
    by_kind: list[KindProgress]


# What `session_snapshot` and the session services need of a session besides rounds and images.
WITH_TASK = ("task", "model_config", "batch")


def sessions_with_task() -> QuerySet[Session]:
    """Sessions with what `session_snapshot` and the session services need besides rounds and images."""
    return Session.objects.select_related(*WITH_TASK)


def sessions_with_rounds() -> QuerySet[Session]:
    """Sessions with task, model, annotator, ordered rounds and images loaded (no N+1 in pages or exports)."""
    return sessions_with_task().select_related("annotator").prefetch_related(
        Prefetch("rounds", queryset=Round.objects.order_by("index")),
        Prefetch("task__task_images", queryset=TaskImage.objects.select_related("blob").order_by("position")),
    )


def user_can_read_session(user: User, session: Session) -> bool:
    if session.annotator_id == user.id:
        return True
    if user.is_admin_role:
        return True
    return user.is_researcher_role and session.batch.members.filter(pk=user.pk).exists()


def session_with_task(session_id: int, annotator_id: int | None = None) -> Session | None:
    """A session with what `session_snapshot` needs besides rounds and images, in one query. With
    ``annotator_id``, only that annotator's session."""
    values = {"session_id": session_id} if annotator_id is None else {"session_id": session_id,
                                                                      "annotator_id": annotator_id}
    found = compiled_reads.fetch(_session_query, (annotator_id is not None,), values, related=WITH_TASK, first=True)
    return found[0] if found else None


def _session_query(owned: bool, *, session_id: int, annotator_id: int | None = None) -> QuerySet[Session]:
    sessions = Session.objects.filter(pk=session_id)
    return sessions.filter(annotator_id=annotator_id) if owned else sessions


def _rounds_query(*, session_id: int) -> QuerySet[Round]:
    return Round.objects.filter(session_id=session_id).order_by("index")


def rounds_in_order(session_id: int) -> list[Round]:
    return compiled_reads.fetch(_rounds_query, (), {"session_id": session_id})


def access_session(user: User, session_id: int) -> Session:
    """Fetch a session the user may see (task, batch and model loaded; `session_snapshot` reads its rounds and
    images). Someone else's session is reported as missing (no id probing)."""
    session = session_with_task(session_id)
    if session is None or not user_can_read_session(user, session):
        raise NotFound(_("Session %(id)s does not exist or is not yours.") % {"id": session_id})
    return session


def _image_hashes(*, task_id: int) -> QuerySet[Any]:
    return TaskImage.objects.filter(task_id=task_id).order_by("position").values_list("blob__sha256")


def task_image_urls(task_id: int) -> list[str]:
    found = compiled_reads.rows(_image_hashes, (), {"task_id": task_id})
    if found is None:
        found = list(_image_hashes(task_id=task_id))
    return [f"/media-task/{sha}" for (sha,) in found]


def ground_truth_revealed(session: Session, rounds: list[Round] | None = None) -> bool:
    """The ground truth is shown from round max_rounds (3) on: when that round exists or is the next one."""
    rounds = list(session.rounds.all()) if rounds is None else rounds
    last = rounds[-1] if rounds else None
    if last is None:
        return False
    if last.index >= session.batch.max_rounds:
        return True
    return (
        last.index == session.batch.max_rounds - 1
        and session.status == Session.Status.AWAITING_FEEDBACK
    )


def round_payload(rnd: Round) -> RoundPayload:
    return {
        "index": rnd.index,
        "feedback_text": rnd.feedback_text,
        "feedback_kind": rnd.feedback_kind,
        "leak_flagged": rnd.leak_flagged,
        "generation_status": rnd.generation_status,
        "answer_text": rnd.answer_text,
        "stream_seq": rnd.stream_seq,
        "extracted_answer": rnd.extracted_answer if rnd.generation_status == Round.Generation.DONE else "",
        "verdict": rnd.final_verdict,
        "verdict_source": rnd.verdict_source,
        # Annotators get the failure's plain sentence; the detail (servers' URLs, exceptions) is for researchers.
        "error": failure_plain_message(rnd.error),
        "error_kind": failure_kind(rnd.error),
        "latency_ms": rnd.latency_ms,
        "first_token_ms": rnd.first_token_ms,
    }


def task_fields(task: Task) -> TaskFields:
    """What a task is, as the annotator's page shows it: never its ground truth, nor its id in the researchers'
    file (an id such as "gold-3" would tell an attention check from the other items)."""
    return {"category": task.category, "question": task.question, "options": task.options,
            "answer_type": task.answer_type}


def session_snapshot(session: Session, rounds: list[Round] | None = None) -> SessionSnapshot:
    """Everything the annotator's page shows. Never includes the ground truth before it is revealed.

    Two queries (rounds, images) on a session loaded with its task, batch and model (`access_session`); one
    when the caller has the session's rounds in order already."""
    rounds = rounds_in_order(session.pk) if rounds is None else rounds
    task = session.task
    revealed = ground_truth_revealed(session, rounds)
    snapshot: SessionSnapshot = {
        "id": session.id,
        "status": session.status,
        "corrected_round": session.corrected_round,
        "max_rounds": session.batch.max_rounds,
        "model": {"name": session.model_config.name, "label": session.model_config.label,
                  "simulated": session.model_config.is_simulated},
        "task": {**task_fields(task), "images": task_image_urls(task.pk)},
        "rounds": [round_payload(r) for r in rounds],
        "next_round": _next_round_index(session, rounds),
        "feedback_draft": session.feedback_draft,
        "ground_truth_revealed": revealed,
    }
    if session.status == Session.Status.ABANDONED:
        snapshot["ended_as"], finished_at = _how_it_ended(session)
        snapshot["finished_at"] = finished_at.isoformat() if finished_at else None
    elif session.status == Session.Status.COMPLETED:
        snapshot["finished_at"] = session.completed_at.isoformat() if session.completed_at else None
    if revealed:
        snapshot["ground_truth"] = task.ground_truth
    elif task.answer_type == task.AnswerType.MANUAL:
        # Manual tasks: the annotator judges against the reference, shown collapsed and marked "do not reveal".
        snapshot["judging_reference"] = task.ground_truth
    return snapshot


# The ends of a participation that free the items its participant held (annotate.crowd.ending), as ``ended_as``.
PARTICIPATION_ENDS = ("returned", "timed_out", "attention")


def _how_it_ended(session: Session) -> tuple[str, datetime | None]:
    """Why an abandoned session ended, and when: ``skipped`` by its annotator; ``returned`` (the participant left
    the study), ``timed_out`` (the study's time limit passed) or ``attention`` (ended by failed attention checks)
    when the end of their participation freed it; else ``expired`` (left until its lease ran out)."""
    if session.assignment_id is None:  # no assignment (nothing to skip): the lease ran out
        return "expired", None
    ended = Assignment.objects.filter(pk=session.assignment_id).values_list(
        "status", "finished_at", "annotator__participation__end_reason", "annotator__participation__ended_at",
    ).first() or ("", None, None, None)
    status, finished_at, end_reason, participation_ended_at = ended
    if status == Assignment.Status.SKIPPED:
        return "skipped", finished_at
    if end_reason in PARTICIPATION_ENDS and participation_ended_at is not None and finished_at is not None \
            and finished_at >= participation_ended_at:  # freed by that end, not by a lease run out before it
        return str(end_reason), finished_at
    return "expired", finished_at


def item_progress(session: Session, viewer: User) -> ItemProgress:
    """Where this item stands in its annotator's work on the batch: its number among their items that count
    (finished or under way; skipped ones where the batch counts them) and, shown to an invited participant of the
    batch, their share and whether this item is its last. Annotators with an account have no share."""
    batch = session.batch
    taken = Assignment.objects.filter(annotator_id=session.annotator_id, work_item__batch_id=session.batch_id)
    if session.assignment_id:
        taken = taken.filter(pk__lte=session.assignment_id)
    counts = taken.aggregate(kept=Count("id", filter=Q(status__in=[Assignment.Status.ACTIVE,
                                                                   Assignment.Status.COMPLETED])),
                             skipped=Count("id", filter=Q(status=Assignment.Status.SKIPPED)))
    number, share = counts["kept"], None
    if viewer.pk == session.annotator_id and is_participant_of(viewer, batch):
        number += counted_skips(batch, counts["skipped"])
        share = batch.items_per_participant or None
    number = max(1, number)
    return {"number": number, "share": share, "last_of_share": share is not None and number >= share}


def _next_round_index(session: Session, rounds: list[Round]) -> int | None:
    if session.status != Session.Status.AWAITING_FEEDBACK or not rounds:
        return None
    return rounds[-1].index + 1


def session_for_annotator(user: User, session_id: int) -> Session:
    """The annotator's own session, for actions that change it (researchers may read but not act).

    An ownership check on the submit path: one query, without the snapshot's rounds and images (the services
    lock and re-read the session themselves).
    """
    session = Session.objects.select_related("assignment").filter(pk=session_id, annotator=user).first()
    if session is None:
        raise NotFound(_("Session %(id)s does not exist or is not yours.") % {"id": session_id})
    return session


WORK_NOUNS = {Batch.Kind.INTERFEEDBACK: gettext_lazy("InterFeedback sessions"),
              Batch.Kind.FIRE: gettext_lazy("FIRE conversations"), Batch.Kind.PREFERENCE: gettext_lazy("preference items")}


def annotator_progress(user: User) -> AnnotatorProgress:
    """The annotator's work of every kind (InterFeedback sessions, FIRE conversations, preference items): finished
    and under way, in total and per kind, from their assignments (one grouped query)."""
    rows = (
        Assignment.objects.filter(annotator=user,
                                  status__in=[Assignment.Status.COMPLETED, Assignment.Status.ACTIVE])
        .values_list("work_item__batch__kind", "status")
        .annotate(n=Count("id"))
    )
    counts: dict[str, dict[str, int]] = {}
    for kind, status, n in rows:
        counts.setdefault(kind, {"completed": 0, "in_progress": 0})[
            "completed" if status == Assignment.Status.COMPLETED else "in_progress"] += n
    return {
        "completed": sum(c["completed"] for c in counts.values()),
        "in_progress": sum(c["in_progress"] for c in counts.values()),
        "by_kind": [{"label": noun, "completed": counts[kind]["completed"], "in_progress": counts[kind]["in_progress"]}
                    for kind, noun in WORK_NOUNS.items() if kind in counts],
    }
