"""Writes of conversation ratings that FIRE and preference batches share: the save path (drafts, the final save
and its idempotency, the rater's locked assignment) and skipping. Each kind's own checks are beside it
(annotate.rating.fire.services, annotate.rating.preference.services).

A final save checks that every rateable turn is rated, marks the ratings final and completes the annotator's
assignment, so the queue counts it toward the batch's overlap K. Final saves are idempotent on
``client_request_id``; drafts may be partial.
``conversation_skip`` passes on a conversation (FIRE or preference) with a reason, through the queue's
``assignment_skip``: it goes to other annotators and never back to this one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import transaction
from django.utils.translation import gettext

from annotate.assignments import assignment_complete, assignment_renew, assignment_skip
from annotate.errors import ApplicationError, Conflict, NotFound
from annotate.models import Assignment, Batch, Rating, Turn, User

MAX_COMMENT_CHARS = 2000
MAX_SKIP_REASON_CHARS = 300  # Assignment.skip_reason
MIN_SCORE, MAX_SCORE = 1, 5
# turn index -> the rating's fields to write (name -> value)
RatingValues = dict[int, dict[str, object]]


@dataclass(frozen=True)
class RatingsSaved:
    conversation_id: int
    saved: int  # rating rows written by this call
    final: bool
    replayed: bool = False  # a repeated final submit (same client_request_id): nothing changed


def lock_assignment(*, annotator: User, conversation_id: int, kind: str) -> Assignment:
    """The annotator's assignment of the conversation, row-locked so saves of one rater are serialized."""
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("work_item__batch")
        .filter(annotator=annotator, work_item__conversation_id=conversation_id)
        .order_by("-created_at")
        .first()
    )
    if assignment is None:
        raise NotFound(f"Conversation {conversation_id} does not exist or is not assigned to you.")
    batch = assignment.work_item.batch
    if batch.kind != kind:
        raise ApplicationError(
            f"Conversation {conversation_id} is in a {batch.get_kind_display()} batch, "
            f"not a {Batch.Kind(kind).label} batch; use that batch's rating endpoint.",
            code="wrong_batch_kind",
        )
    if assignment.status == Assignment.Status.SKIPPED:
        raise Conflict(gettext("You skipped this conversation; it can no longer be rated."))
    return assignment


def check_request_id(client_request_id: str, final: bool) -> None:
    if final and not client_request_id:
        raise ApplicationError("client_request_id is required for the final save.", code="bad_request_id")
    if len(client_request_id or "") > 64:
        raise ApplicationError("client_request_id is at most 64 characters.", code="bad_request_id")


def already_submitted(existing: Iterable[Rating], client_request_id: str, final: bool) -> bool:
    """True for a replay of the same final submit; Conflict for any other write after the final one."""
    finals = [r for r in existing if r.is_final]
    if not finals:
        return False
    if final and client_request_id and any(r.client_request_id == client_request_id for r in finals):
        return True
    raise Conflict(gettext("You already submitted your ratings for this conversation."), code="already_submitted")


def turn_label(index: int) -> str:
    """How messages name a turn: counted from 1 as on the page, with the API's 0-based index."""
    return f"turn {index + 1} (index {index})"


def rateable_turns(conversation_id: int, indices: Iterable[int]) -> dict[int, Turn]:
    """The conversation's rateable turns by index; an unknown or unrateable index in ``indices`` is a 400."""
    turns = {t.index: t for t in Turn.objects.filter(conversation_id=conversation_id).only("id", "index", "is_rateable")}
    for index in indices:
        if index not in turns:
            raise ApplicationError(
                f"Turn index {index} does not exist in this conversation (it has {len(turns)} turns, "
                f"indices 0-{len(turns) - 1}).",
                code="unknown_turn",
            )
        if not turns[index].is_rateable:
            raise ApplicationError(
                f"{turn_label(index).capitalize()} is not rated: FIRE rates each teacher feedback and each student response "
                "after the first.",
                code="not_rateable",
            )
    return {index: turn for index, turn in turns.items() if turn.is_rateable}


def check_score(value: object, *, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_SCORE <= value <= MAX_SCORE:
        raise ApplicationError(f"{what}: the score must be a whole number from 1 to 5, got {value!r}.",
                               code="bad_score")
    return value


def check_comment(value: object, *, what: str) -> str:
    if value is not None and not isinstance(value, str):
        raise ApplicationError(f"{what}: the comment must be text, got {value!r}.", code="bad_comment")
    text = (value or "").strip()
    if len(text) > MAX_COMMENT_CHARS:
        raise ApplicationError(f"{what}: the comment is {len(text)} characters; at most {MAX_COMMENT_CHARS}.",
                               code="comment_too_long")
    return text


def write_ratings(*, annotator: User, turns: dict[int, Turn], values: RatingValues, existing: dict[int, Rating],
                  final: bool, client_request_id: str) -> int:
    """Upsert one rating row per turn index in ``values`` (field name -> value)."""
    to_create: list[Rating] = []
    to_update: list[Rating] = []
    for index, fields in values.items():
        rating = existing.get(turns[index].id)
        if rating is None:
            rating = Rating(turn=turns[index], annotator=annotator)
            to_create.append(rating)
        else:
            to_update.append(rating)
        for name, value in fields.items():
            setattr(rating, name, value)
        rating.is_final = final
        rating.client_request_id = client_request_id if final else ""
    Rating.objects.bulk_create(to_create)
    if to_update:
        names = sorted({name for fields in values.values() for name in fields} | {"is_final", "client_request_id"})
        for rating in to_update:
            rating.save(update_fields=[*names, "updated_at"])
    return len(to_create) + len(to_update)


def finish_assignment(assignment: Assignment, final: bool) -> None:
    if final:
        assignment_complete(assignment_id=assignment.id)
    elif assignment.status == Assignment.Status.ACTIVE:
        assignment_renew(assignment=assignment)  # typing keeps the lease alive


def ratings_write(
    *,
    annotator: User,
    conversation_id: int,
    kind: str,
    indices: Iterable[int],
    client_request_id: str,
    final: bool,
    check: Callable[[dict[int, Turn]], RatingValues],
    complete: Callable[[dict[int, Turn], dict[int, Rating], RatingValues], None],
    also: Callable[[], None] | None = None,
) -> RatingsSaved:
    """The save path every kind of rating shares, in one transaction on the rater's locked assignment.

    ``check(turns)`` turns the request into the field values to write per turn index (a 400 for a bad value);
    on a final save ``complete(turns, existing, values)`` refuses what is still missing, then every rateable turn
    becomes final and the assignment completes. ``also()`` writes what the kind keeps beside the ratings. A final
    save repeated with the same ``client_request_id`` changes nothing; any other write after it is a conflict.
    """
    check_request_id(client_request_id, final)
    with transaction.atomic():
        assignment = lock_assignment(annotator=annotator, conversation_id=conversation_id, kind=kind)
        existing = {
            r.turn_id: r for r in Rating.objects.filter(annotator=annotator, turn__conversation_id=conversation_id)
        }
        if already_submitted(existing.values(), client_request_id, final):
            return RatingsSaved(conversation_id, 0, True, replayed=True)
        turns = rateable_turns(conversation_id, indices)
        values = check(turns)
        if final:
            complete(turns, existing, values)
            # Every rateable turn becomes final, including those scored only in an earlier draft.
            for index in turns:
                values.setdefault(index, {})
        saved = write_ratings(annotator=annotator, turns=turns, values=values, existing=existing, final=final,
                              client_request_id=client_request_id)
        if also is not None:
            also()
        finish_assignment(assignment, final)
    return RatingsSaved(conversation_id, saved, final)


def conversation_skip(*, annotator: User, conversation_id: int, reason: str) -> Assignment:
    """The annotator passes on a conversation (FIRE or preference) with a reason.

    An active assignment is skipped by the queue's ``assignment_skip`` (the slot goes back to the pool for other
    annotators; the queue never serves it to this one again). Repeating a skip changes nothing; a lease that
    expired meanwhile (its slot already back in the pool) is recorded as skipped with the reason; a conversation
    whose ratings were submitted can no longer be skipped (409).
    """
    reason = (reason or "").strip()
    if not reason:
        raise ApplicationError(gettext("Say why you skip this conversation (for example 'the image does not load')."),
                               code="skip_reason")
    if len(reason) > MAX_SKIP_REASON_CHARS:
        raise ApplicationError(gettext("The skip reason is %(length)s characters; at most %(max)s.")
                               % {"length": len(reason), "max": MAX_SKIP_REASON_CHARS},
                               code="skip_reason")
    with transaction.atomic():
        # The same row lock as the rating saves: a skip and a final save of one rater never interleave.
        assignment = (
            Assignment.objects.select_for_update(of=("self",))
            .filter(annotator=annotator, work_item__conversation_id=conversation_id)
            .order_by("-created_at")
            .first()
        )
        if assignment is None:
            raise NotFound(f"Conversation {conversation_id} does not exist or is not assigned to you.")
        if assignment.status == Assignment.Status.COMPLETED:
            raise Conflict(gettext("You already submitted your ratings for this conversation; it can no longer be skipped."),
                           code="already_submitted")
        if assignment.status == Assignment.Status.ACTIVE:
            assignment_skip(assignment=assignment, reason=reason)
        elif assignment.status == Assignment.Status.EXPIRED:
            # Expiry already freed the slot: only the status and the reason change.
            Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.EXPIRED).update(
                status=Assignment.Status.SKIPPED, skip_reason=reason)
        assignment.refresh_from_db(fields=["status", "skip_reason", "finished_at"])
    return assignment
