"""Fast bulk INSERTs for imports.

Why not ``bulk_create``: for 100k tasks it spends most of its time building model instances and compiling one
placeholder per value, and on SQLite Django caps a statement at 999 parameters (~80 task rows), so an import
made ~1,250 statements. Here rows are plain tuples: PostgreSQL gets ``COPY ... FROM STDIN``, SQLite
``executemany`` of one prepared statement; other backends fall back to ``bulk_create``. Only the listed
columns are written, so callers list every NOT NULL column. New ids are not returned: callers that need them
read them back by a natural key in one query.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import orjson
from django.db import connection, models

PAGE_SIZE = 10_000
# COPY's text format: backslash, tab, newline and carriage return are escaped; \N is NULL.
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _json_text(value) -> str:
    if not value:  # most tasks have no options / metadata / recorded answers: skip the encoder
        return "[]" if isinstance(value, list) else "{}" if isinstance(value, dict) else orjson.dumps(value).decode()
    return orjson.dumps(value).decode()


def _copy_value(value) -> str:
    if value is None:
        return "\\N"
    if value is True:
        return "t"
    if value is False:
        return "f"
    if isinstance(value, str):
        # translate() is slow per character; most values have nothing to escape.
        if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
            return value.translate(_COPY_ESCAPES)
        return value
    return str(value)


def copy_from_text(cursor, sql: str, text: str) -> None:
    """``COPY ... FROM STDIN`` with rows in COPY's text format, through psycopg 3 (or psycopg2)."""
    raw = cursor.cursor
    if hasattr(raw, "copy"):  # psycopg 3
        with raw.copy(sql) as copy:
            copy.write(text)
    else:
        raw.copy_expert(sql, io.StringIO(text))


def insert_rows(model: type[models.Model], fields: Sequence[str], rows: list[tuple]) -> None:
    """Insert ``rows`` (tuples in ``fields`` order; JSON fields as Python values) inside the caller's
    transaction."""
    if not rows:
        return
    meta = model._meta
    field_objs = [meta.get_field(name) for name in fields]
    if connection.vendor not in ("postgresql", "sqlite"):
        model.objects.bulk_create([model(**dict(zip(fields, row, strict=True))) for row in rows],
                                  batch_size=1000)
        return
    json_positions = {i for i, f in enumerate(field_objs) if isinstance(f, models.JSONField)}
    if json_positions:
        rows = [tuple(_json_text(v) if i in json_positions else v for i, v in enumerate(row)) for row in rows]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in field_objs)
    table = quote(meta.db_table)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), PAGE_SIZE):
            page = rows[start:start + PAGE_SIZE]
            if connection.vendor == "postgresql":
                text = "".join("\t".join(map(_copy_value, row)) + "\n" for row in page)
                copy_from_text(cursor, f"COPY {table} ({columns}) FROM STDIN", text)
            else:
                placeholders = ", ".join(["%s"] * len(field_objs))
                cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({placeholders})", page)
