"""The example files of docs/reference/examples/: what each one is, which schema its records follow, and how it is
imported (or parsed). Every file in the folder must be listed here: the tests fail on one that is not."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "docs" / "reference" / "examples"
SCHEMA_FILES = ROOT / "docs" / "reference" / "schemas"
ROWS_MAP = "id=qid,question=prompt,options=choices,answer=label,category=subject"


@dataclass(frozen=True)
class Example:
    file: str
    schema: str
    kind: str | None = None  # the import kind; None: not a batch file (study settings, people)
    options: dict = field(default_factory=dict)  # import options (the rows' column map)


EXAMPLE_FILES = (
    Example("tasks.jsonl", "interfeedback-task", "interfeedback"),
    Example("tasks-with-images.zip", "interfeedback-task", "interfeedback"),
    Example("fire.json", "fire-record", "fire"),
    Example("fire-with-images.zip", "fire-record", "fire"),
    Example("preference.jsonl", "preference-record", "preference"),
    Example("benchmark-rows.csv", "benchmark-row", "rows", {"map": ROWS_MAP}),
    Example("study-settings.json", "study-settings"),
    Example("people.csv", "people-row"),
)


def _json_records(data: bytes) -> list[dict]:
    text = data.decode("utf-8")
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _csv_rows(text: str) -> list[dict]:
    """A CSV's rows as objects; an empty cell is a value not given."""
    return [{k: v for k, v in row.items() if v != ""} for row in csv.DictReader(io.StringIO(text))]


def records_of(example: Example) -> list[dict]:
    """The records of an example file as the schema describes them (a benchmark row with its columns mapped)."""
    path = EXAMPLES / example.file
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            name = next(n for n in archive.namelist() if n.endswith((".jsonl", ".json")))
            return _json_records(archive.read(name))
    if example.schema == "benchmark-row":
        renames = {column: target for target, column in (p.split("=") for p in example.options["map"].split(","))}
        return [{renames.get(k, k): v for k, v in row.items()} for row in _csv_rows(path.read_text("utf-8"))]
    if example.schema == "people-row":
        return _csv_rows(path.read_text("utf-8"))
    if example.schema == "study-settings":
        return [json.loads(path.read_text("utf-8"))]
    return _json_records(path.read_bytes())
