"""A reservation: the first free item of a walk taken for an annotator, counted active, with its assignment and,
for a (task, model) item, its session and round 0.

On PostgreSQL it is one statement (data-modifying CTEs): the item is read and locked (others step over it), the
person's serving version is bumped if it still holds the value the request read, and only then is the item counted
and are its rows inserted. A request that finds the version changed has lost a race with another request of the
same person and starts over (`RaceLost`): one item at a time per person without a lock held across statements, so
a next item sends no BEGIN or COMMIT. Elsewhere (the demo's SQLite, which has no such CTEs) the ORM does the same
steps in a transaction.

The values inserted are the unsaved instances' own, prepared by each field as ``save()`` prepares them (defaults,
``auto_now_add``), so a new field with a default needs no change here. Only the item's own columns and the ids the
statement makes are column references. `tests/annotate/queue/test_reservation.py` checks that both ways write the
same rows.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, cast

from django.db import connection, transaction
from django.db.models import BooleanField, F, Field, Model
from django.db.models.expressions import RawSQL

from annotate.assignments import lease_end
from annotate.models import Assignment, ModelConfig, Round, Session, User, WorkItem
from annotate.server import compiled_reads
from annotate.sessions.services import session_new

# The free items' read carries each item's model (round 0 is queued to it).
_WITH_MODEL = ("model_config",)


class RaceLost(Exception):
    """Another request of the same person reserved an item since this one read their serving version."""


@dataclass(frozen=True)
class Claim:
    """Who takes the item: the person, the serving version their request read, the item's place in their sequence
    of the batch, and whether the item gets a session (a (task, model) item; a conversation to rate gets none)."""

    annotator_id: int
    version: int
    position: int
    batch_id: int
    with_session: bool


@dataclass(frozen=True)
class Reserved:
    item: WorkItem
    assignment: Assignment
    session: Session | None
    first_round: Round | None


def reservation_take(build: compiled_reads.Build, shape: tuple[Any, ...], values: dict[str, Any], claim: Claim, *,
                     one_statement: bool | None = None) -> Reserved | None:
    """Take the first item of the free items' read ``build(*shape, **values)`` (a queryset of work items, in
    serving order) for ``claim``, locking it as it is read and stepping over items others hold locked: None where
    the read finds none; `RaceLost` where the person's serving version moved on. ``one_statement``: None picks what
    the database can do (tests force either)."""
    if one_statement is None:
        one_statement = one_statement_here()
    if one_statement:
        free = compiled_reads.select(_claimed, (build, *shape), values, related=_WITH_MODEL, first=True)
        return _take_in_one_statement(free, claim)
    with transaction.atomic():
        # The same order as the one statement: the person's row first, then the item.
        if not list(User.objects.select_for_update(no_key=True).filter(
                pk=claim.annotator_id, serving_version=claim.version).values_list("pk")):
            raise RaceLost
        found = compiled_reads.fetch(_locking, (build, *shape), values, related=_WITH_MODEL, first=True)
        if not found:
            return None
        User.objects.filter(pk=claim.annotator_id).update(serving_version=F("serving_version") + 1)
        reserved = _new_rows(found[0], claim)
        WorkItem.objects.filter(pk=reserved.item.pk).update(active_count=F("active_count") + 1)
        for row in (reserved.assignment, reserved.session, reserved.first_round):
            if row is not None:  # save() fills each row's foreign key from the instance saved before it
                row.save()
        return reserved


def _locking(build: compiled_reads.Build, *shape: Any, **values: Any) -> Any:
    return build(*shape, **values).select_for_update(skip_locked=True, of=("self",))


# The one statement's claim on the person (its ``person`` CTE), as a condition of the free items' own read: checked
# before any item is locked, so a request waiting for the person's row holds no item meanwhile.
_PERSON_CLAIMED = RawSQL("EXISTS (SELECT 1 FROM person)", (), output_field=BooleanField())


def _claimed(build: compiled_reads.Build, *shape: Any, **values: Any) -> Any:
    return build(*shape, **values).filter(_PERSON_CLAIMED)


def one_statement_here() -> bool:
    return connection.vendor == "postgresql"


def _new_rows(item: WorkItem, claim: Claim) -> Reserved:
    assignment = Assignment(work_item=item, annotator_id=claim.annotator_id, lease_expires_at=lease_end(),
                            position=claim.position)
    session, first_round = session_new(assignment=assignment) if claim.with_session else (None, None)
    return Reserved(item, assignment, session, first_round)


def _take_in_one_statement(free: compiled_reads.Select, claim: Claim) -> Reserved | None:
    """In order: the person's row locked if their version still holds (a request of theirs under way is waited for,
    and the version re-read once it is done), the first free item locked, the version bumped, the item counted and
    its rows inserted. One row comes back whatever happened: the person claimed or not, the item's columns or
    none, the ids made."""
    quote = connection.ops.quote_name
    # The rows are made before the item is known: the columns the item fills in are references to it.
    reserved = _new_rows(WorkItem(batch_id=claim.batch_id), claim)
    names = [f"c{n}" for n in range(len(free.columns))]
    chosen = dict(zip(free.columns, (f"chosen.{name}" for name in names), strict=True))
    user, item, version, active = (quote(User._meta.db_table), quote(WorkItem._meta.db_table),
                                   quote("serving_version"), quote("active_count"))
    # Django refuses to compile a locking read outside a transaction (alone, its lock would end with it): the lock
    # clauses it would write are added here, in the statement that holds them.
    lock_person = connection.ops.for_update_sql(no_key=True)
    lock_item = connection.ops.for_update_sql(skip_locked=True, of=(item,))
    parts = [f"person AS MATERIALIZED (SELECT id FROM {user} WHERE id = %s AND {version} = %s {lock_person})",
             f"chosen ({', '.join(names)}) AS MATERIALIZED ({free.sql} {lock_item})",
             f"bumped AS (UPDATE {user} SET {version} = {version} + 1 FROM person, chosen "
             f"WHERE {user}.id = person.id RETURNING {user}.id)",
             f"counted AS (UPDATE {item} SET {active} = {active} + 1 FROM bumped, chosen "
             f"WHERE {item}.id = {chosen['id']} RETURNING {item}.id)"]
    params: list[Any] = [claim.annotator_id, claim.version, *free.params]
    made: list[tuple[str, Model, dict[str, str], str]] = [
        ("new_assignment", reserved.assignment, {"work_item_id": "counted.id"}, "counted")]
    if reserved.session is not None and reserved.first_round is not None:
        made += [("new_session", reserved.session,
                  {"assignment_id": "new_assignment.id", "task_id": chosen["task_id"],
                   "model_config_id": chosen["model_config_id"]}, "new_assignment, chosen"),
                 ("new_round", reserved.first_round, {"session_id": "new_session.id"}, "new_session")]
    for name, instance, refs, source in made:
        sql, values = _insert_select(instance, refs, source)
        parts.append(f"{name} AS ({sql})")
        params += values
    ids = ", ".join(f"(SELECT id FROM {name})" for name, *_ in made)
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(parts)} SELECT (SELECT id FROM person), chosen.*, {ids} "
                       f"FROM (VALUES (1)) AS one LEFT JOIN chosen ON TRUE", params)
        row = cursor.fetchone()
    if row[0] is None:
        raise RaceLost
    item_row, ids_made = row[1:len(names) + 1], row[len(names) + 1:]
    if item_row[0] is None:
        return None
    return _saved_rows(reserved, free.instance(item_row), ids_made)


def _saved_rows(reserved: Reserved, item: WorkItem, ids: tuple[int, ...]) -> Reserved:
    """The rows as ``save()`` would have left them: their ids, the item's columns and each foreign key's instance."""
    assignment, session, first_round = reserved.assignment, reserved.session, reserved.first_round
    assignment.work_item = item
    _saved(assignment, ids[0])
    if session is not None and first_round is not None:
        # A (task, model) item has both (work_item_task_xor_conversation).
        session.task_id, session.model_config = cast(int, item.task_id), cast(ModelConfig, item.model_config)
        session.assignment = assignment
        _saved(session, ids[1])
        first_round.session = session
        _saved(first_round, ids[2])
    return Reserved(item, assignment, session, first_round)


def _saved(instance: Model, pk: int) -> None:
    """The instance as ``save()`` leaves it: its new id, and known to be in the database (``Model._state``)."""
    instance.pk = pk
    instance._state.adding = False
    instance._state.db = connection.alias


@functools.cache
def _insert_columns(model: type[Model]) -> tuple[str, list[tuple[Field[Any, Any], str, str]]]:
    """A model's quoted table and, for each column an insert writes, (field, quoted column, type): the same for
    every statement, worked out once per process."""
    quote = connection.ops.quote_name
    fields = [f for f in model._meta.concrete_fields if f is not model._meta.auto_field]
    return quote(model._meta.db_table), [(f, quote(str(f.column)), str(f.db_type(connection))) for f in fields]


def _insert_select(instance: Model, refs: dict[str, str], source: str) -> tuple[str, list[Any]]:
    """``INSERT INTO <table> (<columns>) SELECT <values> FROM <source> RETURNING id``: each column takes the
    instance's value, cast to its type (a parameter in a SELECT list has none of its own), or the SQL that
    ``refs`` names for it."""
    table, columns = _insert_columns(type(instance))
    values, params = [], []
    for field, _, db_type in columns:
        if field.column in refs:
            values.append(refs[field.column])
        else:
            values.append(f"%s::{db_type}")
            params.append(field.get_db_prep_save(field.pre_save(instance, True), connection))
    sql = (f"INSERT INTO {table} ({', '.join(column for _, column, _ in columns)}) "
           f"SELECT {', '.join(values)} FROM {source} RETURNING id")
    return sql, params
