"""The OpenAPI schema is valid without a warning, and says what the responses are: pages for lists, the one
error body, required output fields, files with their types."""

import json

import pytest
from django.core.management import call_command

from annotate.models import User
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_setup, django_db_blocker, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("schema") / "schema.json"
    with django_db_blocker.unblock():
        call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", "--file", str(out))
    return json.loads(out.read_text())


def responses(schema, path, method="get") -> dict:
    return schema["paths"][path][method]["responses"]


def test_lists_are_documented_as_pages(schema):
    for path, component in (("/api/batches/", "PaginatedResearchBatchList"),
                            ("/api/batches/{batch_id}/sessions/", "PaginatedResearchSessionRowList")):
        body = responses(schema, path)["200"]["content"]["application/json"]["schema"]
        assert body == {"$ref": f"#/components/schemas/{component}"}
        page = schema["components"]["schemas"][component]
        assert set(page["required"]) == {"count", "results"} and page["properties"]["next"]["format"] == "uri"
        assert "page" in [p["name"] for p in schema["paths"][path]["get"]["parameters"]]


def test_every_error_answer_is_the_error_body(schema):
    error = schema["components"]["schemas"]["Error"]
    assert set(error["required"]) == {"detail", "code"}
    documented = 0
    for operations in schema["paths"].values():
        for operation in operations.values():
            for code, answer in operation["responses"].items():
                if code.startswith("4"):
                    assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
                    documented += 1
    assert documented > 60


def test_a_leak_warning_is_documented_as_a_200_not_an_error(schema):
    feedback = responses(schema, "/api/sessions/{session_id}/feedback/", "post")
    assert feedback["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SessionSnapshot"}
    assert feedback["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/StatedAnswerWarning"}
    warning = schema["components"]["schemas"]["StatedAnswerWarning"]
    assert set(warning["required"]) == {"sent", "code", "detail", "detected"}


def test_output_fields_always_present_are_required(schema):
    snapshot = schema["components"]["schemas"]["SessionSnapshot"]
    assert "ground_truth" not in snapshot["required"] and "judging_reference" not in snapshot["required"]
    assert set(snapshot["properties"]) - set(snapshot["required"]) == {"ground_truth", "judging_reference",
                                                                       "finished_at",  # once finished
                                                                       "ended_as"}  # once abandoned
    job = schema["components"]["schemas"]["Job"]
    assert {"done", "hint", "url"} <= set(job["required"])  # read-only (method) fields
    assert schema["components"]["schemas"]["JobStatusEnum"]["enum"] == ["queued", "running", "succeeded", "failed"]
    assert job["properties"]["created_at"]["format"] == "date-time"
    assert job["properties"]["url"]["format"] == "uri-reference"


def test_downloads_are_files_with_their_types(schema):
    answer = responses(schema, "/api/batches/{batch_id}/tables/{name}.{fmt}")["200"]["content"]
    assert answer["image/png"]["schema"] == {"type": "string", "format": "binary"}
    assert answer["text/csv"]["schema"] == {"type": "string"}
    assert answer["application/json"]["schema"] == {"$ref": "#/components/schemas/TableDocument"}
    download = responses(schema, "/api/batches/{batch_id}/exports/{job_id}/download/")["200"]["content"]
    assert download["application/gzip"]["schema"]["format"] == "binary"
    assert download["application/zip"]["schema"]["format"] == "binary"  # a study bundle
    assert set(download) == {"application/jsonl", "application/gzip", "application/zip"}


def test_field_errors_keep_their_names_and_gain_detail_and_code(api_client):
    api_client.force_authenticate(UserFactory(username="ana", role=User.Role.ANNOTATOR))
    response = api_client.post("/api/sessions/1/skip/", {}, format="json")
    assert response.status_code == 400
    assert response.json() == {"detail": "reason: This field is required.", "code": "invalid",
                               "reason": ["This field is required."]}


def test_drf_errors_gain_a_code(api_client):
    response = api_client.get("/api/batches/")
    assert response.status_code == 403
    assert response.json() == {"detail": "Authentication credentials were not provided.",
                               "code": "not_authenticated"}


def test_a_path_the_api_does_not_route_is_a_json_404(api_client):
    response = api_client.get("/api/sessions/not-a-number/")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found.", "code": "not_found"}
    page = api_client.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")
