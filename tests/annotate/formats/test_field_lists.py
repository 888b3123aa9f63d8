"""The schemas name exactly the fields the importers accept. What an importer accepts is found by asking it: each
candidate field (the schema's and the importer's own field list) is fed to the importer's record check, and a field
is accepted when the importer neither refuses it nor reports it as unknown. So a field added to an importer without
its schema fails here, and so does a schema field the importer refuses."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.crowd import questions, study
from annotate.errors import InvalidFields
from annotate.formats.schemas import SCHEMAS
from annotate.importkit.common import ImportReport
from annotate.people.rows import person_rows_from_csv
from annotate.people.services import ROW_FIELDS
from annotate.rating.fire import records as fire_records
from annotate.rating.fire.records import ImageFinder
from annotate.rating.preference import importer as preference_importer
from annotate.sessions.importers import rows, taskrecords

UNKNOWN = "no_such_field_anywhere"


def properties(name: str, *path: str) -> set[str]:
    schema: dict[str, Any] = SCHEMAS[name]
    for step in path:
        schema = schema[step]
    return set(schema["properties"])


def accepted(candidates: set[str], refuses) -> set[str]:
    assert refuses(UNKNOWN), "the check must refuse (or warn about) a field nobody knows"
    return {field for field in candidates if not refuses(field)}


# --- InterFeedback tasks: unknown fields are ignored with a warning ---------------------------------------------

TASK = {"id": "t1", "category": "Visual Logic", "question": "Q?", "options": ["a", "b"], "answer_type": "choice",
        "answer": "A"}


def _task_refuses(field: str) -> bool:
    report = ImportReport(kind="interfeedback", batch="b")
    record = {**TASK, field: TASK.get(field, _sample_value(SCHEMAS["interfeedback-task"], field))}
    taskrecords.task_record(record, 1, report, max_rounds=3, unknown_seen=set())
    return not report.ok or any(repr(field) in warning for warning in report.warnings)


def _sample_value(schema: dict, field: str) -> Any:
    """A value of the field's type that the importer takes (an unknown field gets a string)."""
    prop = schema["properties"].get(field, {"type": "string"})
    types = prop.get("type", "string")
    kind = types[0] if isinstance(types, list) else types
    if "enum" in prop:
        return prop["enum"][0]
    return {"string": "x", "number": 1, "integer": 1, "boolean": True, "array": [], "object": {}}.get(kind, "x")


def test_task_fields_are_the_schemas():
    schema = properties("interfeedback-task")
    assert accepted(schema | taskrecords.KNOWN_FIELDS, _task_refuses) == schema


# --- FIRE and preference records: unknown fields are kept in the metadata, with a warning ----------------------

FIRE = {"question": "Q?", "groundtruth": "A", "conversations": [
    {"role": "student", "type": "response", "value": "a"}, {"role": "teacher", "type": "feedback", "value": "b"}]}
PREFERENCE = {"question": "Q?", "responses": ["one", "two"]}
FIRE_VALUES = {"image": "", "img_path": "", "round": 1, "score": [3], "recorded_answers": {"m": ["x"]}}
PREFERENCE_VALUES = {"image": "", "img_path": "", "models": ["m1", "m2"], "groundtruth": "A"}


def _conversation_refuses(parse, base: dict, values: dict, name: str):
    def refuses(field: str) -> bool:
        report = ImportReport(kind="fire", batch="b")
        record = {**base, field: base.get(field, values.get(field, _sample_value(SCHEMAS[name], field)))}
        parsed = parse(1, 1, record, ImageFinder(None, report), report, {}, set())
        return parsed is None or not report.ok or any(repr(field) in warning for warning in report.warnings)
    return refuses


def test_fire_fields_are_the_schemas():
    schema = properties("fire-record")
    refuses = _conversation_refuses(fire_records.parse_record, FIRE, FIRE_VALUES, "fire-record")
    assert accepted(schema | fire_records.KNOWN_FIELDS, refuses) == schema


def test_preference_fields_are_the_schemas():
    schema = properties("preference-record")
    refuses = _conversation_refuses(preference_importer.parse_preference_record, PREFERENCE, PREFERENCE_VALUES,
                                    "preference-record")
    assert accepted(schema | preference_importer.KNOWN_FIELDS, refuses) == schema


# --- benchmark rows: the column map's fields ---------------------------------------------------------------------

def test_benchmark_row_fields_are_the_column_maps():
    schema = properties("benchmark-row")
    assert accepted(schema | set(rows.TARGETS), lambda field: bool(rows.parse_mapping(f"{field}=column")[1])) == schema


# --- study settings, its screening and questionnaire questions --------------------------------------------------

def test_study_settings_keys_are_the_schemas():
    schema = properties("study-settings")

    def refuses(key: str) -> bool:
        _, problems = study.study_settings_clean({key: None})
        return any(where == f"study.{key}" and message.startswith("unknown") for where, message in problems)

    assert accepted(schema | set(study.STUDY_KEYS) | set(study.READ_ONLY_KEYS), refuses) == schema


SCREENING = {"text": "Q?", "options": ["a", "b"], "answer": "a"}


def test_screening_question_keys_are_the_schemas():
    schema = properties("study-settings", "properties", "screening", "items")

    def refuses(key: str) -> bool:
        problems: list[tuple[str, str]] = []
        questions.screening_clean([{**SCREENING, key: SCREENING.get(key, "x")}], problems)
        return any(where == f"screening[0].{key}" for where, _ in problems)

    assert accepted(schema | {"id", "text", "options", "answer", "explanation"}, refuses) == schema


QUESTION_TYPES = {"likert": {}, "single": {"options": ["a", "b"]}, "multiple": {"options": ["a", "b"]}, "number": {},
                  "text": {}}


def test_questionnaire_question_keys_are_the_schemas():
    """Each question type takes its own keys; together they are the schema's."""
    schema = properties("study-settings", "properties", "pre_survey", "items")
    assert set(QUESTION_TYPES) == set(questions.QUESTION_TYPES)
    values = {"scale": 5, "labels": ["low", "high"], "options": ["a", "b"], "min": 1, "max": 2, "max_length": 10,
              "required": True, "id": "q"}
    taken: set[str] = set()
    for kind, extra in QUESTION_TYPES.items():
        def refuses(key: str, kind=kind, extra=extra) -> bool:
            problems: list[tuple[str, str]] = []
            questions.survey_clean([{"type": kind, "text": "Q?", **extra, key: values.get(key, "x")}], problems, "s")
            return any(where == f"s[0].{key}" for where, _ in problems)

        taken |= accepted(schema, refuses) | {"type", "text"}
    assert taken == schema


# --- the people CSV ----------------------------------------------------------------------------------------------

def test_people_columns_are_the_schemas():
    schema = properties("people-row")

    def refuses(column: str) -> bool:
        header = "username" if column == "username" else f"username,{column}"
        try:
            person_rows_from_csv(f"{header}\n" + ",".join(["someone"] * (header.count(",") + 1)) + "\n")
        except InvalidFields:
            return True
        return False

    assert accepted(schema | set(ROW_FIELDS), refuses) == schema


def test_the_comparison_catches_a_field_added_to_an_importer_or_a_schema(monkeypatch):
    monkeypatch.setattr(taskrecords, "KNOWN_FIELDS", taskrecords.KNOWN_FIELDS | {"difficulty"})
    with pytest.raises(AssertionError):
        test_task_fields_are_the_schemas()  # the importer takes a field no schema names
    monkeypatch.setitem(SCHEMAS["fire-record"]["properties"], "rater", {"type": "string"})
    with pytest.raises(AssertionError):
        test_fire_fields_are_the_schemas()  # the schema names a field the importer does not know
    monkeypatch.setitem(SCHEMAS["people-row"]["properties"], "phone", {"type": "string"})
    with pytest.raises(AssertionError):
        test_people_columns_are_the_schemas()  # the schema names a column the CSV reader refuses
