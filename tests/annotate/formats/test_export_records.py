"""The export records follow their schemas, field for field: a real export's records name exactly the schema's
properties (a field added to an export without its schema fails here) and validate against it. The participants
export and the invite links listing are tables: their reference page names every column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from annotate.crowd.invites import InviteLinkSerializer
from annotate.formats.schemas import SCHEMAS
from evaluation.exports import registry as exports
from evaluation.participants.registration import participants_export
from tests.evaluation.builders import sessions_from_counts
from tests.evaluation.preference.study import import_study, rate, raters
from tests.factories import ModelConfigFactory, make_batch

pytestmark = pytest.mark.django_db
REFERENCE = Path(__file__).resolve().parents[3] / "docs" / "reference"


def _records(batch, name: str, fmt: str) -> list[dict]:
    lines = exports.build_export(batch, name, fmt).read().decode().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _check(records: list[dict], name: str) -> None:
    assert records
    schema = SCHEMAS[name]
    assert set().union(*(record.keys() for record in records)) == set(schema["properties"])
    problems = [f"{error.json_path}: {error.message}" for record in records
                for error in Draft202012Validator(schema).iter_errors(record)]
    assert not problems, "\n".join(problems[:10])


@pytest.fixture
def interfeedback_batch(annotator, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    model = ModelConfigFactory(name="model-a")
    batch = make_batch(models=[model], tasks=0)
    sessions_from_counts(batch, model, "Visual Logic", (1, 1, 1, 0), 4, annotators=(annotator,), with_rounds=True)
    return batch


def test_session_records_are_the_schemas(interfeedback_batch):
    records = _records(interfeedback_batch, "sessions", "jsonl")
    _check(records, "session-record")
    schema = SCHEMAS["session-record"]["properties"]
    assert {key for r in records for key in r["task"]} == set(schema["task"]["properties"])
    assert {key for r in records for rnd in r["rounds"] for key in rnd} == set(schema["rounds"]["items"]["properties"])


def test_fire_conversation_records_are_the_schemas(interfeedback_batch):
    _check(_records(interfeedback_batch, "sessions", "fire"), "fire-conversation-export")


@pytest.fixture
def preference_batch(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    batch = import_study(tmp_path)
    rate(batch, raters())
    return batch


def test_preference_response_records_are_the_schemas(preference_batch):
    records = _records(preference_batch, "preference-responses", "jsonl")
    _check(records, "preference-response")
    rating = SCHEMAS["preference-response"]["properties"]["ratings"]["items"]["properties"]
    assert {key for r in records for given in r["ratings"] for key in given} == set(rating)


def test_preference_pair_records_are_the_schemas(preference_batch):
    _check(_records(preference_batch, "preference-dpo", "jsonl"), "preference-pair")


def _documented(page: str) -> str:
    return (REFERENCE / page).read_text()


def test_the_participants_page_names_every_column():
    batch = make_batch(models=[], tasks=0)
    columns = participants_export(batch, with_ids=True).columns
    page = _documented("participants-export.md")
    assert [c for c in columns if f"`{c}`" not in page] == []


def test_the_invites_page_names_every_field():
    page = _documented("invites-export.md")
    assert [f for f in InviteLinkSerializer().fields if f"`{f}`" not in page] == []
