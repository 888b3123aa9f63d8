"""Researcher API: happy paths, 403/404/400, query counts, exports, recompute jobs, OpenAPI schema."""

from __future__ import annotations

import csv
import io
import json

import pytest
from rest_framework.authtoken.models import Token

from annotate.models import Job, ModelConfig, User
from evaluation.interfeedback import services
from evaluation.interfeedback import tasks as outcome_tasks
from tests.evaluation.builders import sessions_from_counts
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch(researcher, annotator):
    model_a, model_b = (ModelConfigFactory(name=name, backend=ModelConfig.Backend.REPLAY) for name in ("model-a", "model-b"))
    batch = make_batch(models=[model_a, model_b], tasks=0, members=[researcher])
    batch.name = "Pilot study"
    batch.save()
    sessions_from_counts(batch, model_a, "Visual Logic", (17, 9, 5, 3), 80, annotators=(annotator,), with_rounds=True)
    sessions_from_counts(batch, model_b, "Math (Text)", (1, 2, 0, 1), 16, annotators=(annotator,), with_rounds=True)
    services.outcome_recompute(batch_id=batch.id)
    return batch


@pytest.fixture
def token_client(api_client, researcher):
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return api_client


def test_batch_list_with_token(token_client, batch, django_assert_max_num_queries):
    make_batch(models=[], tasks=0)  # not a member: not listed
    with django_assert_max_num_queries(4):
        response = token_client.get("/api/batches/")
    assert response.status_code == 200
    assert [(b["name"], b["sessions_counted"]) for b in response.json()["results"]] == [("Pilot study", 96)]


def test_report(token_client, batch, django_assert_max_num_queries):
    with django_assert_max_num_queries(8):  # ... one for the models' display names, one for tokens and cost
        response = token_client.get(f"/api/batches/{batch.id}/report/")
    assert response.status_code == 200
    body = response.json()
    assert body["sessions"] == 96
    accuracy = body["tables"]["accuracy"]["rows"]
    # Beside each value, the sessions behind it: k right in round 0 of n (17/80 = 21.3; 1/16 = 6.3; none: 0 of 0)
    assert accuracy == [
        {"Model": "model-a", "Math (Text)": None, "Math (Text) (k)": 0, "Math (Text) (n)": 0, "Visual Logic": 21.3,
         "Visual Logic (k)": 17, "Visual Logic (n)": 80, "Average": 21.3, "Average (k)": 17, "Average (n)": 80},
        {"Model": "model-b", "Math (Text)": 6.3, "Math (Text) (k)": 1, "Math (Text) (n)": 16, "Visual Logic": None,
         "Visual Logic (k)": 0, "Visual Logic (n)": 0, "Average": 6.3, "Average (k)": 1, "Average (n)": 16},
    ]
    cell = next(c for c in body["cells"] if c["model"] == "model-a")
    assert cell["corrected"] == {"round_0": 17, "round_1": 9, "round_2": 5, "round_3": 3, "never": 46}
    assert cell["correction_rate"] == {"round_1": 14.3, "round_2": 7.9, "round_3": 4.8}
    assert len(body["annotators"]) == 1 and body["annotators"][0]["sessions"] == 96


def test_report_filters(token_client, batch, annotator, django_assert_max_num_queries):
    with django_assert_max_num_queries(9):
        response = token_client.get(f"/api/batches/{batch.id}/report/",
                                    {"annotator": annotator.pseudonym, "category": "Math (Text)"})
    assert response.status_code == 200 and response.json()["sessions"] == 16
    dated = token_client.get(f"/api/batches/{batch.id}/report/", {"date_from": "2025-03-02"})
    assert dated.status_code == 200 and dated.json()["sessions"] == 0


@pytest.mark.parametrize(("params", "message"), [
    ({"date_from": "03/01/2025"}, "date_from"),
    ({"date_from": "2025-03-02", "date_to": "2025-03-01"}, "date_from is after date_to"),
    ({"annotator": "ann-nobody"}, "No annotator with pseudonym 'ann-nobody'"),
])
def test_report_bad_filter_is_400(token_client, batch, params, message):
    response = token_client.get(f"/api/batches/{batch.id}/report/", params)
    assert response.status_code == 400
    assert message in response.json()["detail"]


def test_annotator_and_outsider_get_403(api_client, batch, annotator, outsider):
    for user in (annotator, outsider):
        api_client.force_authenticate(user)
        for url in ("/api/batches/", f"/api/batches/{batch.id}/report/",
                    f"/api/batches/{batch.id}/tables/accuracy.csv", f"/api/batches/{batch.id}/sessions/"):
            assert api_client.get(url).status_code == 403, url
        assert api_client.post(f"/api/batches/{batch.id}/recompute/").status_code == 403


def test_anonymous_is_refused(api_client, batch):
    assert api_client.get(f"/api/batches/{batch.id}/report/").status_code in (401, 403)


def test_missing_batch_or_not_a_member_is_404(api_client, batch):
    stranger = UserFactory(username="rachel", role=User.Role.RESEARCHER)
    api_client.force_authenticate(stranger)
    assert api_client.get(f"/api/batches/{batch.id}/report/").status_code == 404
    assert api_client.get("/api/batches/999999/report/").status_code == 404
    assert api_client.get(f"/api/batches/{batch.id}/tables/accuracy.md").status_code == 404


def test_admin_reads_any_batch(api_client, batch):
    api_client.force_authenticate(UserFactory(username="ada", role=User.Role.ADMIN))
    assert api_client.get(f"/api/batches/{batch.id}/report/").status_code == 200


def test_table_downloads(token_client, batch):
    response = token_client.get(f"/api/batches/{batch.id}/tables/accuracy.csv", HTTP_ACCEPT="text/csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="pilot-study-accuracy.csv"' in response["Content-Disposition"]
    assert list(csv.reader(io.StringIO(response.content.decode())))[1] == [
        "model-a", "", "0", "0", "21.3", "17", "80", "21.3", "17", "80"]
    md = token_client.get(f"/api/batches/{batch.id}/tables/correction.md", {"model": "model-b"})
    assert "| model-b | 1 | 13.3 | 13.3 |" in md.content.decode()
    png = token_client.get(f"/api/batches/{batch.id}/tables/fig4.png")
    assert png.status_code == 200 and png["Content-Type"] == "image/png" and png.content.startswith(b"\x89PNG")
    svg = token_client.get(f"/api/batches/{batch.id}/tables/fig5.svg")
    assert svg.status_code == 200 and b"<svg" in svg.content


def test_table_download_errors(token_client, batch):
    bad_format = token_client.get(f"/api/batches/{batch.id}/tables/accuracy.xlsx")
    assert bad_format.status_code == 400
    assert bad_format.json()["detail"] == (
        "Unknown format 'xlsx' for accuracy; expected one of csv, md, tex, json, png, svg."
    )
    assert token_client.get(f"/api/batches/{batch.id}/tables/fig4.csv").status_code == 400
    assert token_client.get(f"/api/batches/{batch.id}/tables/table9.csv").status_code == 404
    not_fire = token_client.get(f"/api/batches/{batch.id}/tables/fire-ratings.csv")
    assert not_fire.status_code == 400 and "FIRE ratings" in not_fire.json()["detail"]


def test_session_list_paginated(token_client, batch, annotator, django_assert_max_num_queries):
    with django_assert_max_num_queries(5):
        response = token_client.get(f"/api/batches/{batch.id}/sessions/", {"outcome": "never", "model": "model-a"})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 46 and len(body["results"]) == 46
    row = body["results"][0]
    assert row["corrected_round"] is None and row["annotator"] == annotator.pseudonym
    assert row["url"].startswith(f"/research/batches/{batch.id}/sessions/")
    page_two = token_client.get(f"/api/batches/{batch.id}/sessions/", {"page": 2})
    assert page_two.status_code == 200 and len(page_two.json()["results"]) == 96 - 50
    assert token_client.get(f"/api/batches/{batch.id}/sessions/", {"outcome": "7"}).status_code == 400


def test_session_exports_stream_jsonl_and_fire(token_client, batch, annotator):
    response = token_client.get(f"/api/batches/{batch.id}/sessions.jsonl", {"category": "Math (Text)"})
    assert response.status_code == 200 and response.streaming
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert len(lines) == 16
    never = next(line for line in lines if line["corrected_round"] is None)
    assert never["annotator"] == annotator.pseudonym and "alice" not in json.dumps(never)
    assert [r["index"] for r in never["rounds"]] == [0, 1, 2, 3]
    assert never["rounds"][1]["feedback_text"] == "Feedback 1" and never["rounds"][0]["latency_ms"] == 100
    fire = token_client.get(f"/api/batches/{batch.id}/sessions.fire.jsonl", {"outcome": "1", "model": "model-b"})
    records = [json.loads(line) for line in b"".join(fire.streaming_content).decode().splitlines()]
    assert len(records) == 2
    assert [(turn["role"], turn["type"]) for turn in records[0]["conversations"]] == [
        ("student", "response"), ("teacher", "feedback"), ("student", "response")]
    assert records[0]["score"] == [1, 10] and records[0]["round"] == 1


def test_recompute_job(token_client, batch, django_capture_on_commit_callbacks, sent_tasks):
    with django_capture_on_commit_callbacks(execute=True):
        response = token_client.post(f"/api/batches/{batch.id}/recompute/")
    assert response.status_code == 202
    job_id = response.json()["id"]
    assert response["Location"] == f"/api/batches/{batch.id}/jobs/{job_id}/"
    assert token_client.get(response["Location"]).json()["status"] == Job.Status.QUEUED
    outcome_tasks.outcome_recompute(job_id)  # what the worker does
    job = token_client.get(response["Location"]).json()
    assert (job["status"], job["progress"], job["report"]["sessions"]) == ("succeeded", 1.0, 96)
    assert token_client.get(f"/api/batches/{batch.id}/jobs/999999/").status_code == 404


def test_openapi_schema_covers_every_endpoint(token_client):
    response = token_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    paths = json.loads(response.content)["paths"]
    for path in ("/api/batches/", "/api/batches/{batch_id}/report/", "/api/batches/{batch_id}/tables/{name}.{fmt}",
                 "/api/batches/{batch_id}/sessions/", "/api/batches/{batch_id}/sessions.jsonl",
                 "/api/batches/{batch_id}/sessions.fire.jsonl", "/api/batches/{batch_id}/recompute/",
                 "/api/batches/{batch_id}/jobs/{job_id}/"):
        assert path in paths, path
    assert token_client.get("/api/docs/").status_code == 200
