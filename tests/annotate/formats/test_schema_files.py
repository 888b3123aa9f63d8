"""The schemas have one source, the code: docs/reference/schemas/ holds exact copies (the format_schemas command
writes and checks them), and the API serves the same text to anyone, like the OpenAPI schema."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from jsonschema import Draft202012Validator

from annotate.formats.files import schema_files_stale, schema_text
from annotate.formats.schemas import SCHEMAS, WRITTEN
from tests.annotate.formats.examples import EXAMPLE_FILES, SCHEMA_FILES


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_each_schema_is_a_valid_draft_2020_12_schema(name):
    Draft202012Validator.check_schema(SCHEMAS[name])
    assert SCHEMAS[name]["$id"] == f"/api/schema/formats/{name}.json"


def test_the_documentation_copies_are_the_code():
    assert schema_files_stale(SCHEMA_FILES) == [], "run: python manage.py format_schemas"
    call_command("format_schemas", "--check")


def test_the_check_names_a_stale_copy(tmp_path):
    call_command("format_schemas", "--to", str(tmp_path))
    (tmp_path / "people-row.json").write_text("{}\n")
    (tmp_path / "old-format.json").write_text("{}\n")
    with pytest.raises(CommandError, match="people-row.json, old-format.json"):
        call_command("format_schemas", "--check", "--to", str(tmp_path))


def test_every_format_a_user_writes_has_an_example():
    assert {e.schema for e in EXAMPLE_FILES} == set(WRITTEN)


@pytest.mark.django_db
def test_the_api_serves_the_index_and_each_schema_without_signing_in(client):
    index = client.get("/api/schema/formats/")
    assert index.status_code == 200
    listed = {entry["name"]: entry for entry in index.json()}
    assert list(listed) == list(SCHEMAS)
    assert {name for name, entry in listed.items() if entry["direction"] == "import"} == set(WRITTEN)
    for name, entry in listed.items():
        response = client.get(entry["url"])
        assert response.status_code == 200 and response["Content-Type"] == "application/schema+json"
        assert response.content.decode() == schema_text(name)
        assert json.loads(response.content) == SCHEMAS[name]


@pytest.mark.django_db
def test_an_unknown_format_is_a_404_naming_the_known_ones(client):
    response = client.get("/api/schema/formats/no-such-format.json")
    assert response.status_code == 404
    assert "interfeedback-task" in response.content.decode()
