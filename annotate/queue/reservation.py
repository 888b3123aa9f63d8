"""The writes of a reservation: the item counted active, the assignment, and for a (task, model) item its session
and round 0. On PostgreSQL they go in one statement (data-modifying CTEs), so a next item sends five statements
besides BEGIN and COMMIT (the token, the lock on the person, their latest assignment, the item, these writes)
instead of eight; elsewhere (the demo's SQLite, which has no such CTEs) the ORM saves them one by one.

The values inserted are the unsaved instances' own, prepared by each field as ``save()`` prepares them (defaults,
``auto_now_add``), so a new field with a default needs no change here. Only the ids the statement makes are
column references. `tests/annotate/queue/test_reservation.py` checks that both ways write the same rows.
"""

from __future__ import annotations

import functools
from typing import Any

from django.db import connection
from django.db.models import F, Field, Model

from annotate.models import Assignment, Round, Session, WorkItem


def reservation_save(item: WorkItem, assignment: Assignment, session: Session | None = None,
                     first_round: Round | None = None, *, one_statement: bool | None = None) -> None:
    """Count ``item`` (locked by the caller) active and save ``assignment`` for it, with ``session`` and
    ``first_round`` when given. ``one_statement``: None picks what the database can do (tests force either)."""
    if one_statement is None:
        one_statement = connection.vendor == "postgresql"
    if not one_statement:  # save() fills each row's foreign key from the instance saved before it
        WorkItem.objects.filter(pk=item.pk).update(active_count=F("active_count") + 1)
        for row in (assignment, session, first_round):
            if row is not None:
                row.save()
        return
    quote = connection.ops.quote_name
    parts = [f"counted AS (UPDATE {quote(WorkItem._meta.db_table)} SET active_count = active_count + 1 "
             f"WHERE id = %s RETURNING id)"]
    params: list[Any] = [item.pk]
    made: list[tuple[str, Model, dict[str, str], str]] = [("new_assignment", assignment, {}, "counted")]
    if session is not None and first_round is not None:
        made += [("new_session", session, {"assignment_id": "new_assignment.id"}, "new_assignment"),
                 ("new_round", first_round, {"session_id": "new_session.id"}, "new_session")]
    for name, instance, refs, source in made:
        sql, values = _insert_select(instance, refs, source)
        parts.append(f"{name} AS ({sql})")
        params += values
    names = [name for name, *_ in made]
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(parts)} SELECT {', '.join(f'{n}.id' for n in names)} "
                       f"FROM {', '.join(names)}", params)
        ids = cursor.fetchone()
    if ids is None:  # the caller holds the item's lock: its row cannot be gone
        raise RuntimeError(f"work item {item.pk} vanished while reserved")
    _saved(assignment, ids[0])
    if session is not None and first_round is not None:  # the foreign keys the statement filled in, as save() would
        session.assignment = assignment
        _saved(session, ids[1])
        first_round.session = session
        _saved(first_round, ids[2])


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
