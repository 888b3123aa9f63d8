"""People to create, read from a CSV file (the bulk page and ``manage.py users add --from``) or an API body.

A CSV has a header line naming its columns: ``username`` (required), and any of ``email``, ``first_name``,
``last_name``. Lines are counted as an editor shows them (the header is line 1), so errors say ``line 3, email``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from annotate.errors import InvalidFields
from annotate.people.services import MAX_ROWS, ROW_FIELDS, PersonRow

MAX_CSV_BYTES = 2 * 1024 * 1024


def person_rows_from_csv(data: bytes | str) -> list[PersonRow]:
    if isinstance(data, bytes):
        if len(data) > MAX_CSV_BYTES:
            raise InvalidFields([("file", f"larger than {MAX_CSV_BYTES // 1024 // 1024} MiB; split it")])
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise InvalidFields([("file", f"is not UTF-8 text (byte {error.start}); save it as CSV UTF-8")]) from None
    text = data.lstrip("\ufeff")
    if "\x00" in text:
        raise InvalidFields([("file", "contains NUL bytes: it is not a CSV text file")])
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as error:
        raise InvalidFields([("line 1", f"not readable as CSV: {error}")]) from None
    columns = [name.strip().lower() for name in header or []]
    if "username" not in columns:
        raise InvalidFields([("line 1", "the header must name a username column (and optionally "
                                        f"{', '.join(ROW_FIELDS[1:])}); got {', '.join(columns) or 'nothing'}")])
    duplicated = sorted({name for name in columns if columns.count(name) > 1})
    if duplicated:
        raise InvalidFields([("line 1", f"column(s) named twice: {', '.join(duplicated)}")])
    unknown = [name for name in columns if name not in ROW_FIELDS]
    if unknown:
        raise InvalidFields([("line 1", f"unknown column(s) {', '.join(map(repr, unknown))}; use "
                                        f"{', '.join(ROW_FIELDS)}")])
    rows: list[PersonRow] = []
    problems: list[tuple[str, str]] = []
    while True:
        start = reader.line_num + 1
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            raise InvalidFields([(f"line {start}", f"not readable as CSV: {error}")]) from None
        if not any(value.strip() for value in values):
            continue  # blank lines are allowed
        where = f"line {start}"
        if len(values) > len(columns):
            problems.append((where, f"{len(values)} values for {len(columns)} columns"))
            continue
        record = dict(zip(columns, (value.strip() for value in values), strict=False))
        rows.append(_row(where, record, ()))
        if len(rows) > MAX_ROWS:
            raise InvalidFields([("file", f"more than {MAX_ROWS} people; split it")])
    if problems:
        raise InvalidFields(problems)
    return rows


def person_rows_from_data(items: Sequence[Mapping[str, Any]]) -> list[PersonRow]:
    """Rows of an API body (a list of objects), named ``users[0]``, ``users[1]``..."""
    return [_row(f"users[{index}]", {k: "" if v is None else str(v).strip() for k, v in item.items()},
                 tuple(k for k in item if k not in ROW_FIELDS)) for index, item in enumerate(items)]


def _row(where: str, record: Mapping[str, str], unknown: tuple[str, ...]) -> PersonRow:
    return PersonRow(where=where, unknown=unknown, **{name: record.get(name) or "" for name in ROW_FIELDS})
