"""Benchmark rows (MMMU-Pro, MathVerse and the like): JSONL, CSV or Parquet, alone or in a zip with images.

Columns are mapped onto our fields with ``--map question=question,answer=answer,image=image_path,id=qid``;
images are a path (next to the file or inside the zip), a data: URL, or raw bytes (Parquet, also the Hugging
Face ``{"bytes", "path"}`` image struct). Unmapped scalar columns are kept in the task's metadata.
"""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path, PurePosixPath
from typing import IO, Any

from annotate.importkit.common import (
    ImportContext,
    ImportReport,
    SourceError,
    ZipSource,
    decode_text,
    open_source,
    records_only_objects,
)
from annotate.importkit.records_file import load_records, read_whole
from annotate.importkit.sources import LIMITS
from annotate.sessions.importers.interfeedback import (
    InterFeedbackImporter,
    open_records_file,
)
from annotate.sessions.importers.taskrecords import (
    NUMBER_PATTERN,
    DuplicateIds,
    images_prepare,
    task_record,
)
from annotate.sessions.importers.taskwriter import TaskPlan, plan_tasks
from annotate.sessions.verification import option_letters

TARGETS = ("id", "question", "answer", "options", "image", "category", "answer_type", "source", "gold")
ROW_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".parquet")
_TRUE, _FALSE = {"1", "true", "yes"}, {"0", "false", "no", ""}


def parse_mapping(text: str | dict | None) -> tuple[dict[str, str], list[str]]:
    """``field=column,...`` -> {field: column}; unknown fields are errors (a typo would silently drop data)."""
    if isinstance(text, dict):
        pairs = list(text.items())
    else:
        pairs = []
        for item in (text or "").split(","):
            if item.strip():
                target, sep, column = item.partition("=")
                pairs.append((target.strip(), column.strip() if sep else ""))
    mapping, errors = {}, []
    for target, column in pairs:
        target = "image" if target == "images" else target
        if target not in TARGETS:
            errors.append(f"unknown field {target!r} in the column map; known: {', '.join(TARGETS)}")
        elif not column:
            errors.append(f"{target!r} in the column map needs a column name (field=column)")
        else:
            mapping[target] = column
    return mapping, errors


def _list_cell(value: Any) -> Any:
    """Options or images stored as text: a JSON list, a Python list literal (MMMU-Pro), or one plain value."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        for parse in (json.loads, ast.literal_eval):
            try:
                return parse(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue
        return value  # reported by the record checks as "expected a list"
    return value


def _images_cell(value: Any) -> Any:
    value = _list_cell(value)
    if value is None or value == "":
        return []
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, dict):  # Hugging Face image struct
            item = item.get("bytes") or item.get("path")
        if item is not None and item != "":
            out.append(item)
    return out


class _Columns:
    def __init__(self, mapping: dict[str, str], columns: list[str], report: ImportReport, unit: str):
        self.columns = set(columns)
        self.mapping = dict(mapping)
        for target in TARGETS:  # a column named like the field needs no mapping
            if target not in self.mapping and target in self.columns:
                self.mapping[target] = target
        if "image" not in self.mapping and "images" in self.columns:
            self.mapping["image"] = "images"
        self.ok = True
        for target, column in mapping.items():
            if column not in self.columns:
                report.add(None, target, f"column {column!r} is not in the file "
                           f"(columns: {', '.join(sorted(self.columns))[:300]})", unit=unit)
                self.ok = False
        for target in ("question", "answer"):
            if target not in self.mapping:
                report.add(None, target, f"no column for {target!r}; map one with --map {target}=COLUMN", unit=unit)
                self.ok = False
        self.extra = sorted(self.columns - set(self.mapping.values()))
        labels = {t: c for t, c in self.mapping.items()}
        labels["images"] = labels.pop("image", "image")
        labels["answer"] = self.mapping.get("answer", "answer")
        self.labels = labels


def _canonical(row: dict, cols: _Columns, number: int, counters: dict) -> dict:
    get = {t: row.get(c) for t, c in cols.mapping.items()}
    options = _list_cell(get.get("options"))
    answer = get.get("answer")
    answer_type = get.get("answer_type")
    if not answer_type:
        if options:
            answer_type = "choice"
        elif isinstance(answer, int | float) or (isinstance(answer, str) and NUMBER_PATTERN.fullmatch(answer.strip())):
            answer_type = "number"
        else:
            answer_type = "text"
    if answer_type == "choice" and isinstance(options, list) and isinstance(answer, str):
        letters = option_letters(options)
        if answer.strip().upper() not in letters and options.count(answer) == 1:
            answer = letters[options.index(answer)]  # the option's text given instead of its letter
            counters["converted"] += 1
    gold = get.get("gold")
    if isinstance(gold, str) and gold.strip().lower() in _TRUE | _FALSE:
        gold = gold.strip().lower() in _TRUE
    meta = {k: row[k] for k in cols.extra if isinstance(row.get(k), str | int | float | bool)}
    return {
        "id": get["id"] if "id" in cols.mapping else f"row-{number}",
        "question": get.get("question"), "answer": answer, "options": options if options not in ("", None) else [],
        "answer_type": answer_type, "images": _images_cell(get.get("image")),
        "category": get["category"] if "category" in cols.mapping else counters["category"],
        "source": get.get("source") or "", "gold": gold, "meta": meta,
    }


def _csv_rows(data: bytes, report: ImportReport, label: str) -> tuple[list[str], list[tuple[int, dict]]]:
    text = decode_text(data, report, label=label)
    if text is None:
        return [], []
    csv.field_size_limit(LIMITS.max_line_bytes)
    reader = csv.reader(io.StringIO(text, newline=""))
    rows, header, start = [], [], 1
    try:
        for cells in reader:
            if not header:
                header = [c.strip() for c in cells]
                if len(set(header)) != len(header):
                    report.add(1, None, "the header row repeats a column name")
                    return [], []
            elif any(c.strip() for c in cells):
                if len(cells) != len(header):
                    report.add(start, None, f"the row has {len(cells)} cells; the header has {len(header)}")
                else:
                    rows.append((start, dict(zip(header, cells, strict=True))))
            start = reader.line_num + 1
    except csv.Error as error:
        report.add(reader.line_num, None, f"invalid CSV: {error}")
    return header, rows


def _parquet_rows(data: bytes, report: ImportReport, _label: str) -> tuple[list[str], list[tuple[int, dict]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        header = parquet.schema_arrow.names
        rows, number = [], 0
        for chunk in parquet.iter_batches(batch_size=10_000):
            for row in chunk.to_pylist():
                number += 1
                rows.append((number, row))
    except (pa.ArrowException, OSError, ValueError) as error:
        report.add(None, None, f"the Parquet file cannot be read ({error})", unit="row")
        return [], []
    return header, rows


def _json_rows(stream: IO[bytes], report: ImportReport, label: str) -> tuple[list[str], list[tuple[int, dict]]]:
    rows = records_only_objects(load_records(stream, report, label=label), report)
    header = sorted({key for _, row in rows for key in row})
    return header, rows


class RowsImporter(InterFeedbackImporter):
    name = "rows"

    def _rows_file(self, source, path: Path, ctx: ImportContext) -> str | None:
        if not isinstance(source, ZipSource):
            return path.name
        wanted = ctx.options.get("rows_file")
        names = [n for n in source.names() if PurePosixPath(n).suffix.lower() in ROW_SUFFIXES and "/" not in n]
        if wanted or len(names) == 1:
            return wanted or names[0]
        tops = {n.split("/")[0] for n in source.names() if "/" in n}
        if not names and len(tops) == 1:  # a zip of a folder
            return self._rows_file_in(source, tops.pop(), ctx)
        ctx.report.add(None, None, "the zip must hold exactly one rows file (.jsonl, .csv or .parquet) at its top "
                       f"level; found {', '.join(names) or 'none'}")
        return None

    def _rows_file_in(self, source: ZipSource, folder: str, ctx: ImportContext) -> str | None:
        names = [n for n in source.names() if n.startswith(folder + "/") and n.count("/") == 1
                 and PurePosixPath(n).suffix.lower() in ROW_SUFFIXES]
        if len(names) == 1 and source.use_root_of(names[0].split("/", 1)[1]):
            return names[0].split("/", 1)[1]
        ctx.report.add(None, None, "the zip must hold exactly one rows file (.jsonl, .csv or .parquet)")
        return None

    def validate(self, ctx: ImportContext) -> TaskPlan | None:
        report, path = ctx.report, Path(ctx.path)
        mapping, errors = parse_mapping(ctx.options.get("map"))
        for error in errors:
            report.add(None, "map", error)
        images_dir = ctx.options.get("images_dir")
        source = open_source(path, report, images_dir=Path(images_dir) if images_dir else None)
        if source is None or errors:
            return None
        try:
            with report.timed("validate"):
                name = self._rows_file(source, path, ctx)
                stream = open_records_file(source, path, ctx, filename=name) if name else None
                if stream is None:
                    return None
                suffix = PurePosixPath(name).suffix.lower()
                unit = "row" if suffix == ".parquet" else "line"
                with stream:
                    if suffix in (".parquet", ".csv", ".tsv"):  # read whole (Parquet needs random access)
                        data = read_whole(stream, report, label=name, count_lines=suffix != ".parquet")
                        if data is None:
                            return None
                        parse = _parquet_rows if suffix == ".parquet" else _csv_rows
                        header, rows = parse(data, report, name)
                        del data
                    else:
                        header, rows = _json_rows(stream, report, name)
                records, labels = self._records(rows, header, mapping, ctx, unit)
            if records is None:
                return None
            with report.timed("images"):
                images = images_prepare(records, source, report, progress=ctx.progress, unit=unit, labels=labels)
        except SourceError as error:
            report.add(None, None, str(error))
            return None
        finally:
            source.close()
        if not report.ok:
            return None
        with report.timed("validate"):
            return plan_tasks(records, images, ctx.batch, report, update=ctx.update, unit=unit)

    def _records(self, rows, header, mapping, ctx: ImportContext, unit: str):
        report = ctx.report
        if not rows:
            if report.ok:
                report.add(None, None, "the file holds no rows")
            return None, None
        cols = _Columns(mapping, header, report, unit)
        if not cols.ok:
            return None, None
        counters = {"converted": 0, "category": ctx.options.get("category") or "Uncategorized"}
        if "id" not in cols.mapping:
            report.warn("no id column (map one with --map id=COLUMN): ids are made from row numbers, so "
                        "re-importing a re-ordered file will not match")
        if "category" not in cols.mapping:
            report.warn(f"no category column: every task gets category {counters['category']!r}")
        records, duplicates = [], DuplicateIds(report, unit=unit, label=cols.labels.get("id", "id"))
        for done, (number, row) in enumerate(rows, start=1):
            raw = _canonical(row, cols, number, counters)
            duplicates.check(number, raw["id"])
            record = task_record(raw, number, report, max_rounds=ctx.max_rounds, unknown_seen=set(), unit=unit,
                                 labels=cols.labels, allow_bytes=True, warn_unknown=False)
            if record is not None:
                records.append(record)
            if done % 5000 == 0:
                ctx.tick("read", done, len(rows))
        ctx.tick("read", len(rows), len(rows))
        if counters["converted"]:
            report.warn(f"{counters['converted']} choice answer(s) given as the option's text were turned into "
                        "option letters")
        return records, cols.labels
