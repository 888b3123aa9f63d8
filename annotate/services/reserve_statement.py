"""Reserving a work item in one SQL statement on PostgreSQL (the queue's hot path).

The ORM path of `annotate.services.queue` takes ten round trips to reserve a fresh item (BEGIN, the locking
select, the claim, three inserts, COMMIT...). Under load each round trip waits for a core, so here one statement
does it all with data-modifying CTEs: lock the first free item (``FOR UPDATE SKIP LOCKED``), count it active,
insert the assignment, the session and its round 0. A single statement is atomic on its own: no BEGIN or COMMIT.

The inserted values come from unsaved model instances (defaults and ``auto_now_add`` applied as ``save()`` would),
so a new field with a default needs no change here; only the ids the statement itself makes are column references.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import Model, QuerySet

from annotate.models import Assignment, ModelConfig, Round, Session, WorkItem

# What dispatching round 0 needs of the item's model (`ModelConfig.queue_name` and the time limits); the rest of
# the row loads on access.
_CONFIG_FIELDS = ("id", "backend", "queue", "soft_time_limit", "time_limit")


def supported() -> bool:
    """Writable CTEs with SKIP LOCKED: PostgreSQL. Elsewhere (the demo's SQLite) the ORM path runs."""
    return connection.vendor == "postgresql"


def _insert_select(instance: Model, refs: dict[str, str], source: str) -> tuple[str, list]:
    """``INSERT INTO <table> (<columns>) SELECT <values> FROM <source> RETURNING id`` for ``instance``'s fields;
    the columns named in ``refs`` take that SQL expression over ``source`` instead of the instance's value. Each
    value is cast to its column's type (an untyped literal in a SELECT would be read as text)."""
    quote = connection.ops.quote_name
    columns, values, params = [], [], []
    for field in instance._meta.concrete_fields:
        if field is instance._meta.auto_field:
            continue
        columns.append(quote(field.column))
        if field.column in refs:
            values.append(refs[field.column])
        else:
            values.append(f"%s::{field.cast_db_type(connection)}")
            params.append(field.get_db_prep_save(field.pre_save(instance, True), connection))
    sql = (f"INSERT INTO {quote(instance._meta.db_table)} ({', '.join(columns)}) "
           f"SELECT {', '.join(values)} FROM {source} RETURNING {quote('id')}")
    return sql, params


def reserve(candidates: QuerySet, assignment: Assignment, session: Session, first_round: Round) -> bool:
    """Lock the first item of ``candidates`` (an ordered WorkItem queryset) that no one else has locked, count it
    active and insert ``assignment`` for it, with ``session`` and ``first_round`` when it is a (task, model) item.
    On success the instances are saved (ids set, the item and its model attached) and True is returned; False
    when no item was free."""
    if candidates.query.is_empty():
        return False
    quote = connection.ops.quote_name
    item_table = quote(WorkItem._meta.db_table)
    select, select_params = candidates.values("id")[:1].query.sql_with_params()
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
