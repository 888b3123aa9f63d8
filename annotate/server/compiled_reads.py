"""The next-item path's reads with their SQL compiled once per process, not on every request.

Django builds and compiles a queryset's SQL afresh each time it runs. For the reads of a next item (the lock on the
person, their latest assignment, a newcomer's open batches, the first free item) that was more than half of the
10-13 ms of CPU the request cost the app (benchmarks/next_item_cost.py), while PostgreSQL ran them in a fraction of
a millisecond. Their SQL depends on the request's values (ids, a batch's overlap) only through its parameters, so
each queryset is compiled once per shape (what changes its SQL, such as a batch's rules) with stand-in values, and
each call sends that SQL with the request's values in the stand-ins' places. The querysets stay the one definition
of who is served: no SQL is written here, only Django's own reused (docs/decisions/compiled-reads.md).

- On PostgreSQL only, and COMPILED_READS=0 turns it off: the querysets then run through the ORM as they are.
- Proof at compile time: the queryset is compiled with two sets of stand-ins; the two SQL texts must be the same, and
  every stand-in must sit in the same parameter slot in both (a value written into the SQL itself is refused).
- Proof on every call where COMPILED_READS_CHECK=1 (the test suite sets it): the queryset is compiled afresh
  with the request's own values, and the request stops if that SQL or its parameters differ in anything from what
  is sent. Every serving test of the suite checks it, and a Django upgrade that compiles differently fails there.

`rows` gives a ``values_list`` queryset's tuples. `fetch` gives model instances with their related ones, as
``select_related`` would: it reads every column of those models as a ``values_list`` and builds each instance with
``Model.from_db`` (Django's documented way to build an instance from a row) after each field's ``from_db_value``
(JSON), as the ORM does on PostgreSQL, which has no converters of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Model, QuerySet
from django.db.models.constants import LOOKUP_SEP

# Two sets of stand-in values: far from the ids, counts and overlaps the app makes, yet in every compared column's
# range (Django compiles a comparison with an out-of-range integer to no SQL at all).
_STAND_INS = (1_900_000_001, 1_950_000_001)
# The integers the kept SQL holds for: every integer column type compares them in range, as it does the stand-ins.
_PROVEN_MAX = 2**31 - 1


class CompiledReadError(RuntimeError):
    """A queryset whose SQL is not a function of its parameters alone, or that compiles differently from what was
    kept: a bug to fix, never a request to serve with a stale statement."""


@dataclass(frozen=True)
class _Statement:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[str | None, ...]  # for each parameter, the value it takes (None: a constant of the queryset)

    def bind(self, values: dict[str, Any]) -> list[Any]:
        return [values[slot] if slot is not None else param for slot, param in zip(self.slots, self.params, strict=True)]


_statements: dict[Hashable, _Statement] = {}

Build = Callable[..., QuerySet[Any]]


def enabled() -> bool:
    """On, and on PostgreSQL (SQLite has converters of its own and other SQL: the ORM runs there)."""
    return settings.COMPILED_READS and connection.vendor == "postgresql"


def rows(build: Build, shape: tuple[Hashable, ...], values: dict[str, Any]) -> list[tuple[Any, ...]] | None:
    """The rows of ``build(*shape, **values)`` (a ``values_list`` queryset), sent as the SQL kept for ``shape``; None
    where the caller is to run the queryset through the ORM instead: off (`enabled`), or an integer outside the range
    the kept SQL is proven for (Django compiles a comparison with an out-of-range integer, such as a 26-digit id
    from a URL, to no SQL at all). ``values``: ids, counts or strings, each the same type on every call. Must run
    where the queryset could (select_for_update: inside the transaction)."""
    kept = _kept(build, shape, values)
    if kept is None:
        return None
    with connection.cursor() as cursor:
        cursor.execute(*kept)
        return cursor.fetchall()


def _kept(build: Build, shape: tuple[Hashable, ...], values: dict[str, Any]) -> tuple[str, list[Any]] | None:
    """The SQL kept for ``shape`` with ``values`` bound (compiled on its first call), or None (see `rows`)."""
    if not enabled() or any(isinstance(value, int) and not 0 <= value <= _PROVEN_MAX for value in values.values()):
        return None
    key = (build, shape)
    statement = _statements.get(key)
    if statement is None:
        statement = _statements[key] = _compile(build, shape, values)
    params = statement.bind(values)
    if settings.COMPILED_READS_CHECK:
        _check(build, shape, values, statement.sql, params)
    return statement.sql, params


def _sql(queryset: QuerySet[Any]) -> tuple[str, tuple[Any, ...]]:
    sql, params = queryset.query.sql_with_params()  # what the queryset would send, without sending it
    return sql, tuple(params)


def _stand_in(value: Any, which: int, n: int) -> Any:
    if isinstance(value, str):
        return f"stand-in {which}.{n}"
    if isinstance(value, int) and not isinstance(value, bool):
        return _STAND_INS[which] - n
    raise CompiledReadError(f"{value!r}: only ids, counts and strings are values of a compiled read")


def _compile(build: Build, shape: tuple[Hashable, ...], values: dict[str, Any]) -> _Statement:
    compiled = []
    for which in range(len(_STAND_INS)):
        stand_ins = {name: _stand_in(value, which, n) for n, (name, value) in enumerate(values.items())}
        compiled.append((stand_ins, *_sql(build(*shape, **stand_ins))))
    (first, sql, params), (second, sql_2, params_2) = compiled
    if sql != sql_2 or len(params) != len(params_2):
        raise CompiledReadError(f"{build.__qualname__}{shape}: its SQL changes with its values")
    by_first = {value: name for name, value in first.items()}
    slots: list[str | None] = []
    for param, param_2 in zip(params, params_2, strict=True):
        name = by_first.get(param) if isinstance(param, int | str) else None
        if name is None and param != param_2 or name is not None and second[name] != param_2:
            raise CompiledReadError(f"{build.__qualname__}{shape}: a parameter that is no value of its own")
        slots.append(name)
    return _Statement(sql, params, tuple(slots))


def _check(build: Build, shape: tuple[Hashable, ...], values: dict[str, Any], sql: str, params: list[Any]) -> None:
    fresh_sql, fresh_params = _sql(build(*shape, **values))
    if fresh_sql != sql or list(fresh_params) != params:
        raise CompiledReadError(f"{build.__qualname__}{shape} compiles to\n{fresh_sql}\n{fresh_params}\nnot the kept"
                                f"\n{sql}\n{params}")


def fetch(build: Build, shape: tuple[Hashable, ...], values: dict[str, Any], *, related: tuple[str, ...] = (),
          first: bool = False) -> list[Any]:
    """The instances of ``build(*shape, **values)`` (a queryset of a model) with the ``related`` paths loaded as
    ``select_related`` loads them; ``first``: at most one. From the SQL kept for the shape, or through the ORM where
    `rows` says so: one definition of the read either way."""
    found = rows(_as_rows, (build, related, first, *shape), values)
    if found is None:
        queryset = build(*shape, **values)
        queryset = queryset.select_related(*related) if related else queryset
        return list(queryset[:1] if first else queryset)
    loaded = _layout(build, related, shape, values)
    return [_instance(row, loaded) for row in found]


Loaded = list[tuple[tuple[str, ...], type[Model]]]
_loaded: dict[Hashable, Loaded] = {}


@dataclass(frozen=True)
class Select:
    """`fetch`'s read as SQL for a statement of the caller's to embed (PostgreSQL only): ``columns`` names each
    column of its rows (``model_config__id``: a related model's), and `instance` builds what `fetch` gives from one."""

    sql: str
    params: list[Any]
    columns: list[str]
    loaded: Loaded

    def instance(self, row: Sequence[Any]) -> Any:
        return _instance(row, self.loaded)


def select(build: Build, shape: tuple[Hashable, ...], values: dict[str, Any], *, related: tuple[str, ...] = (),
           first: bool = False) -> Select:
    """The SQL `fetch` would send: the kept one, or where compiled reads are off, the queryset's compiled afresh."""
    kept = _kept(_as_rows, (build, related, first, *shape), values)
    sql, params = kept if kept is not None else _sql(_as_rows(build, related, first, *shape, **values))
    loaded = _layout(build, related, shape, values)
    return Select(sql, list(params), _column_names(loaded), loaded)


def _layout(build: Build, related: tuple[str, ...], shape: tuple[Hashable, ...], values: dict[str, Any]) -> Loaded:
    """The models a read's rows carry, worked out once per read and process."""
    key = (build, related)
    loaded = _loaded.get(key)
    if loaded is None:
        loaded = _loaded[key] = _models_of(build(*shape, **values).model, related)
    return loaded


def _models_of(model: type[Model], related: tuple[str, ...]) -> Loaded:
    """Each model a row carries with the path that reaches it: the queryset's own (``()``), then every step of the
    ``related`` paths (``select_related``'s syntax), in order."""
    loaded: dict[tuple[str, ...], type[Model]] = {(): model}
    for path in related:
        steps = tuple(path.split(LOOKUP_SEP))
        for n in range(1, len(steps) + 1):
            if steps[:n] not in loaded:
                loaded[steps[:n]] = loaded[steps[:n - 1]]._meta.get_field(steps[n - 1]).related_model
    return list(loaded.items())


def _as_rows(build: Build, related: tuple[str, ...], first: bool, *shape: Hashable, **values: Any) -> QuerySet[Any]:
    """``build``'s queryset as the ``values_list`` of every column of the models it loads, in `_models_of`'s order."""
    queryset = build(*shape, **values)
    queryset = queryset.values_list(*_column_names(_models_of(queryset.model, related)))
    return queryset[:1] if first else queryset


def _column_names(loaded: Loaded) -> list[str]:
    return [LOOKUP_SEP.join((*path, field.attname)) for path, model in loaded for field in model._meta.concrete_fields]


def _instance(row: Sequence[Any], loaded: Loaded) -> Any:
    """The queryset's instance of ``row``, each related one set on the instance before it on its path (left unset
    where an outer join found nothing), built by ``Model.from_db`` after each field's ``from_db_value``."""
    made: dict[tuple[str, ...], Model | None] = {}
    start = 0
    for path, model in loaded:
        fields = model._meta.concrete_fields
        values = list(row[start:start + len(fields)])
        start += len(fields)
        if values[fields.index(model._meta.pk)] is None:
            made[path] = None
            continue
        for n, field in enumerate(fields):
            if values[n] is not None and hasattr(field, "from_db_value"):
                values[n] = field.from_db_value(values[n], None, connection)
        made[path] = model.from_db(connection.alias, [field.attname for field in fields], values)
        if path and made[path[:-1]] is not None:
            setattr(made[path[:-1]], path[-1], made[path])
    return made[()]
