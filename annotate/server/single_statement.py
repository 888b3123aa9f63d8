"""Writes of the hot paths done in one SQL statement on PostgreSQL.

Under load each database round trip of a request waits for a core, so the next-item and submit paths do their
writes in one statement each, with data-modifying CTEs, instead of the ORM's BEGIN, several statements and COMMIT:
a single statement is atomic on its own.

- `reserve`: lock the first free work item (``FOR UPDATE SKIP LOCKED``), count it active, insert the assignment,
  the session and its round 0 (the ORM path took ten round trips; this one, with the reads before it, four).
- `insert_after_conditional_update`: claim a row with a conditional UPDATE and insert its child only if the claim
  matched (a submit: the session stops awaiting feedback as its new round is inserted).

Inserted values come from unsaved model instances (defaults and ``auto_now_add`` applied as ``save()`` would),
so a new field with a default needs no change here; only the ids the statement itself makes are column references.
Elsewhere (the demo's SQLite) the callers run their ORM path.
"""

from __future__ import annotations

import functools

from django.db import connection
from django.db.models import NOT_PROVIDED, Field, GeneratedField, Model

from annotate.models import Assignment, ModelConfig, Round, Session, WorkItem

# What dispatching round 0 needs of the item's model (`ModelConfig.queue_name` and the time limits); the rest of
# the row loads on access.
_CONFIG_FIELDS = ("id", "backend", "queue", "soft_time_limit", "time_limit")


# The models whose rows these statements insert from unsaved instances.
INSERTED_MODELS = (Assignment, Session, Round)


def unsupported_fields(model: type[Model]) -> list[str]:
    """Fields an insert built here would get wrong: a database default (``db_default``: the instance holds a
    placeholder, not the value) or a generated column (never inserted). A system check refuses them."""
    return [f.name for f in model._meta.concrete_fields
            if isinstance(f, GeneratedField) or f.db_default is not NOT_PROVIDED]


def supported() -> bool:
    """Writable CTEs with SKIP LOCKED: PostgreSQL."""
    return connection.vendor == "postgresql"


@functools.cache
def _insert_columns(model: type[Model]) -> tuple[str, list[tuple[Field, str, str]]]:
    """A model's quoted table and, for each column an insert writes, (field, quoted column, cast type): the same
    for every statement, so worked out once per process."""
    quote = connection.ops.quote_name
    fields = [f for f in model._meta.concrete_fields if f is not model._meta.auto_field]
    return quote(model._meta.db_table), [(f, quote(f.column), f.cast_db_type(connection)) for f in fields]


def _insert_select(instance: Model, refs: dict[str, str], source: str) -> tuple[str, list]:
    """``INSERT INTO <table> (<columns>) SELECT <values> FROM <source> RETURNING id`` for ``instance``'s fields;
    the columns named in ``refs`` take that SQL expression over ``source`` instead of the instance's value. Each
    value is cast to its column's type (an untyped literal in a SELECT would be read as text)."""
    table, columns = _insert_columns(type(instance))
    values, params = [], []
    for field, _, cast in columns:
        if field.column in refs:
            values.append(refs[field.column])
        else:
            values.append(f"%s::{cast}")
            params.append(field.get_db_prep_save(field.pre_save(instance, True), connection))
    sql = (f"INSERT INTO {table} ({', '.join(column for _, column, _ in columns)}) "
           f"SELECT {', '.join(values)} FROM {source} RETURNING {connection.ops.quote_name('id')}")
    return sql, params


def reserve(candidate: tuple[str, list], assignment: Assignment, session: Session, first_round: Round) -> bool:
    """Lock the item ``candidate`` selects (SQL and parameters of a one-row WorkItem id select) unless someone
    else has locked it, count it active and insert ``assignment`` for it, with ``session`` and ``first_round``
    when it is a (task, model) item. On success the instances are saved (ids set, the item and its model
    attached) and True is returned; False when no item was free."""
    quote = connection.ops.quote_name
    item_table = quote(WorkItem._meta.db_table)
    select, select_params = candidate
    item_columns = [f.column for f in WorkItem._meta.concrete_fields]
    assignment_sql, assignment_params = _insert_select(
        assignment, {"work_item_id": "taken.id"}, "taken")
    session_sql, session_params = _insert_select(
        session, {"batch_id": "taken.batch_id", "task_id": "taken.task_id",
                  "model_config_id": "taken.model_config_id", "assignment_id": "new_assignment.id"},
        "taken, new_assignment WHERE taken.task_id IS NOT NULL")
    round_sql, round_params = _insert_select(first_round, {"session_id": "new_session.id"}, "new_session")
    config_columns = ", ".join(f"config.{quote(ModelConfig._meta.get_field(f).column)}" for f in _CONFIG_FIELDS)
    sql = f"""
        WITH item AS ({select} FOR UPDATE OF {item_table} SKIP LOCKED),
        taken AS (UPDATE {item_table} SET active_count = active_count + 1 FROM item
                  WHERE {item_table}.id = item.id RETURNING {", ".join(f"{item_table}.{quote(c)}" for c in item_columns)}),
        new_assignment AS ({assignment_sql}),
        new_session AS ({session_sql}),
        new_round AS ({round_sql})
        SELECT taken.*, new_assignment.id, new_session.id, new_round.id, {config_columns}
        FROM taken CROSS JOIN new_assignment
        LEFT JOIN new_session ON true LEFT JOIN new_round ON true
        LEFT JOIN {quote(ModelConfig._meta.db_table)} config ON config.id = taken.model_config_id
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [*select_params, *assignment_params, *session_params, *round_params])
        row = cursor.fetchone()
    if row is None:
        return False
    n = len(item_columns)
    item = WorkItem.from_db(connection.alias, [f.attname for f in WorkItem._meta.concrete_fields], row[:n])
    assignment_id, session_id, round_id = row[n:n + 3]
    if item.model_config_id is not None:
        item.model_config = ModelConfig.from_db(connection.alias, list(_CONFIG_FIELDS), row[n + 3:])
    _mark_saved(assignment, assignment_id, work_item=item)
    if session_id is not None:
        _mark_saved(session, session_id, batch_id=item.batch_id, task_id=item.task_id,
                    model_config=item.model_config, assignment=assignment)
        _mark_saved(first_round, round_id, session=session)
    return True


def _mark_saved(instance: Model, pk: int, **values) -> None:
    """Give an instance the id the statement made and the values it took from other rows, as save() would."""
    for name, value in values.items():
        setattr(instance, name, value)
    instance.pk = pk
    instance._state.adding = False
    instance._state.db = connection.alias


def insert_after_conditional_update(row: Model, *, parent: Model, link: str, expect: dict, changes: dict) -> bool:
    """Update ``parent``'s row with ``changes`` only where its fields still hold the ``expect`` values, and insert
    ``row`` (its ``link`` foreign key pointing at the parent) only if that update matched. True when both were
    done (``row`` is then saved, and ``parent`` has the changes); False when the parent no longer matched."""
    quote, meta = connection.ops.quote_name, type(parent)._meta

    def assignments(values: dict, joiner: str) -> tuple[str, list]:
        fields = [meta.get_field(name) for name in values]
        sql = joiner.join(f"{quote(f.column)} = %s" for f in fields)
        return sql, [f.get_db_prep_save(values[f.name], connection) for f in fields]

    set_sql, set_params = assignments(changes, ", ")
    where_sql, where_params = assignments({"id": parent.pk, **expect}, " AND ")
    claim = f"UPDATE {quote(meta.db_table)} SET {set_sql} WHERE {where_sql} RETURNING {quote('id')}"
    insert, insert_params = _insert_select(row, {row._meta.get_field(link).column: "claimed.id"}, "claimed")
    with connection.cursor() as cursor:
        cursor.execute(f"WITH claimed AS ({claim}) {insert}", [*set_params, *where_params, *insert_params])
        inserted = cursor.fetchone()
    if inserted is None:
        return False
    for name, value in changes.items():
        setattr(parent, name, value)
    _mark_saved(row, inserted[0], **{link: parent})
    return True
