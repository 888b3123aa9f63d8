"""Queries on the paths that run many times a second, compiled to SQL once per process instead of per call.

Building a queryset and compiling it costs far more CPU than running it. A draft autosave's one-row UPDATE took
0.92 ms of CPU through the ORM and 0.10 ms as the same SQL on a cursor; the session page's snapshot spent 45% of
its time compiling SQL. A prepared query is an ordinary queryset written over its arguments: the first call
builds it with stand-in values and compiles it, later calls run the same SQL with their own values put where the
stand-ins were. Results are what the ORM gives: model instances (``select_related`` included) or
``values_list`` rows, with the same conversions.

A query is compiled per database alias (the SQL differs between PostgreSQL and SQLite). Whatever the queryset
holds besides its arguments is frozen at the first call: never put ``timezone.now()`` or a setting that may
change in one. Integer arguments are ids compared for equality: one beyond 64 bits (a 26-digit id in a URL) is
one no row has, so the query answers no rows (or updates none) without running, as the ORM does; SQLite could
not even bind it.

This reads private queryset internals of Django 5.2 (``_prefetch_related_lookups``, ``_iterable_class``,
``_fields``, the compiler's ``klass_info``/``select``, ``get_related_populators``). ``PREPARED_QUERIES=0`` turns
every prepared query back into the plain ORM call it stands for (the suite runs both ways in CI), and a test and a
system check say so loudly when the installed Django is not the one these internals were checked against.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import django
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet
from django.db.models.query import ModelIterable, ValuesListIterable, get_related_populators
from django.db.models.sql import UpdateQuery

# The Django release whose private internals this module was checked against (tests/annotate/server/test_prepared).
CHECKED_DJANGO = (5, 2)


def enabled() -> bool:
    """Prepared queries on (the default): ``PREPARED_QUERIES=0`` runs the plain ORM instead."""
    return settings.PREPARED_QUERIES


def django_is_checked() -> bool:
    return tuple(django.VERSION[:2]) == CHECKED_DJANGO


_INT64 = range(-(2**63), 2**63)


def _matches_nothing(args: tuple) -> bool:
    """An integer argument no 64-bit column can hold: no row can equal it."""
    return any(isinstance(value, int) and value not in _INT64 for value in args)


# Stand-ins per argument kind, found again among the compiled parameters. Two sets: a constant of the query that
# happens to equal a stand-in of one set cannot equal its twin in the other. Integers stay within a small
# positive column's range (the ORM turns out-of-range comparisons into always-true or always-false SQL).
_STAND_INS: dict[type, Callable[[int, int], Any]] = {
    int: lambda position, set_: 20_011 + 100 * set_ + position,
    str: lambda position, set_: f"<prepared argument {position} of set {set_}>",
}


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple
    slots: tuple[tuple[int, ...], ...]  # per argument: where it goes in params
    compiler: Any
    converters: dict

    def bind(self, args: tuple) -> list:
        params = list(self.params)
        for positions, value in zip(self.slots, args, strict=True):
            for position in positions:
                params[position] = value
        return params


class _Prepared:
    def __init__(self, build: Callable[..., Any], *kinds: type):
        self.build, self.kinds = build, kinds
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def compiled(self, alias: str) -> _Compiled:
        compiled = self._compiled.get(alias)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.get(alias) or self._compile(alias)
                self._compiled[alias] = compiled
        return compiled

    def _compile(self, alias: str) -> _Compiled:
        compiled = [self._compile_with(alias, set_) for set_ in (0, 1)]
        (sql, params, slots, compiler), (twin_sql, _, twin_slots, _) = compiled
        for position, found in enumerate(slots):
            if not found or found != twin_slots[position] or sql != twin_sql:
                # The ORM folded the value into the SQL text or transformed it: it cannot be replaced.
                raise TypeError(f"argument {position} of {self.build.__qualname__} is not a plain query parameter")
        return _Compiled(sql, tuple(params), slots, compiler, self._converters(compiler))

    def _compile_with(self, alias: str, set_: int):
        stand_ins = [_STAND_INS[kind](position, set_) for position, kind in enumerate(self.kinds)]
        compiler = self._compiler(self.build(*stand_ins), alias)
        sql, params = compiler.as_sql()
        slots = tuple(tuple(i for i, value in enumerate(params) if value == stand_in) for stand_in in stand_ins)
        return sql, params, slots, compiler

    def _compiler(self, built, alias: str):
        raise NotImplementedError

    def _converters(self, compiler) -> dict:
        return {}


class PreparedQuery(_Prepared):
    """A read: ``build(*args)`` returns a queryset of model instances or of ``values_list`` rows."""

    def _compiler(self, queryset: QuerySet, alias: str):
        if queryset._prefetch_related_lookups or queryset._known_related_objects:
            raise TypeError("a prepared query cannot prefetch; prepare the related read on its own")
        if queryset._iterable_class not in (ModelIterable, ValuesListIterable):
            raise TypeError("a prepared query returns model instances or values_list rows (not flat, named or dicts)")
        self.values_list = queryset._iterable_class is ValuesListIterable
        query = queryset.query
        if self.values_list and list(queryset._fields) != [*query.extra_select, *query.values_select,
                                                            *query.annotation_select]:
            raise TypeError("a prepared values_list names its plain fields first, then its annotations")
        return query.get_compiler(using=alias)

    def _converters(self, compiler) -> dict:
        return compiler.get_converters([column[0] for column in compiler.select[: compiler.col_count]])

    def all(self, *args, using: str = DEFAULT_DB_ALIAS) -> list:
        if not enabled():
            return list(self.build(*args).using(using))
        if _matches_nothing(args):
            return []
        compiled = self.compiled(using)
        with connections[using].cursor() as cursor:
            cursor.execute(compiled.sql, compiled.bind(args))
            rows = cursor.fetchall()
        if compiled.converters:  # what the ORM converts (JSON, dates, booleans on SQLite), with this thread's connection
            connection = connections[using]
            rows = [_converted(row, compiled.converters, connection) for row in rows]
        if self.values_list:
            return [tuple(row) for row in rows]
        return _instances(compiled.compiler, rows, using)

    def sql(self, *args, using: str = DEFAULT_DB_ALIAS) -> tuple[str, list]:
        """The SQL and parameters for these arguments, to run inside a larger statement."""
        if not enabled():
            sql, params = self.build(*args).query.get_compiler(using=using).as_sql()
            return sql, list(params)
        compiled = self.compiled(using)
        return compiled.sql, compiled.bind(args)

    def first(self, *args, using: str = DEFAULT_DB_ALIAS):
        rows = self.all(*args, using=using)
        return rows[0] if rows else None


class PreparedUpdate(_Prepared):
    """A write: ``build(*args)`` returns (queryset, {field: new value}); ``run`` returns the rows updated."""

    def _compiler(self, built, alias: str):
        queryset, values = built
        query = queryset.query.chain(UpdateQuery)
        query.add_update_values(values)
        query.annotations = {}  # as QuerySet.update
        return query.get_compiler(using=alias)

    def run(self, *args, using: str = DEFAULT_DB_ALIAS) -> int:
        if not enabled():
            queryset, values = self.build(*args)
            return queryset.using(using).update(**values)
        if _matches_nothing(args):
            return 0
        compiled = self.compiled(using)
        with connections[using].cursor() as cursor:
            cursor.execute(compiled.sql, compiled.bind(args))
            return cursor.rowcount


def _converted(row, converters: dict, connection) -> list:
    row = list(row)
    for position, (functions, expression) in converters.items():
        value = row[position]
        for function in functions:
            value = function(value, expression, connection)
        row[position] = value
    return row


def _instances(compiler, rows: list, alias: str) -> list:
    """Model instances from converted rows, as the ORM's ModelIterable makes them (related objects of
    ``select_related`` attached, deferred fields left deferred)."""
    klass_info, select = compiler.klass_info, compiler.select
    fields = klass_info["select_fields"]
    start, end = fields[0], fields[-1] + 1
    init_list = [column[0].target.attname for column in select[start:end]]
    populators = get_related_populators(klass_info, select, alias)
    model = klass_info["model"]
    instances = []
    for row in rows:
        instance = model.from_db(alias, init_list, row[start:end])
        for populator in populators:
            populator.populate(row, instance)
        instances.append(instance)
    return instances
