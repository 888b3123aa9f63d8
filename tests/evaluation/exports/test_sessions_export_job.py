"""The sessions export as a background job: the task (called directly, no eager mode), its file, progress and
failures, the API (202, job polling, download; 403/404/400), the report page's button and the job page, the
limit on direct downloads, and one end-to-end run on a real Celery worker."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import time
from unittest import mock

import pytest
from django.db import OperationalError
from django.test import AsyncClient
from kombu.exceptions import OperationalError as BrokerError
from rest_framework.authtoken.models import Token

from annotate.jobs.services import job_fail
from annotate.models import Job, Session, User
from evaluation.exports import jobs as export_jobs
from evaluation.exports import registry as exports
from evaluation.exports import tasks as export_tasks
from evaluation.exports.filters import NO_FILTERS, ReportFilters
from evaluation.exports.renderers.sessions import session_record
from evaluation.interfeedback import selectors, services
from tests.evaluation.builders import sessions_from_counts
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db

SECRET = "recorded-answer-never-exported"


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def batch(researcher, annotator, media):
    model_a, model_b = ModelConfigFactory(name="model-a"), ModelConfigFactory(name="model-b")
    batch = make_batch(models=[model_a, model_b], tasks=0, members=[researcher])
    batch.name = "Pilot study"
    batch.save()
    sessions_from_counts(batch, model_a, "Visual Logic", (5, 3, 2, 1), 17, annotators=(annotator,), with_rounds=True)
    sessions_from_counts(batch, model_b, "Math (Text)", (1, 2, 0, 1), 9, annotators=(annotator,), with_rounds=True,
                         completed_at=dt.datetime(2025, 4, 2, 9, tzinfo=dt.UTC))
    # Task fields the export never carried (recorded answers, metadata) must stay out of the file.
    batch.tasks.update(recorded_answers={"model-a": [SECRET]}, metadata={"note": SECRET})
    # A session still in progress is not exported.
    task = batch.tasks.first()
    Session.objects.create(batch=batch, task=task, model_config=model_a, annotator=annotator,
                           status=Session.Status.AWAITING_FEEDBACK)
    services.outcome_recompute(batch_id=batch.id)
    return batch


@pytest.fixture
def queued(monkeypatch):
    """The broker is the outside world: record what would be queued, the test then runs the task itself."""
    sent: list[int] = []
    monkeypatch.setattr("annotate.queue_contract.send_task", lambda name, args, **kw: sent.append(args[0]))
    return sent


@pytest.fixture
def token_client(api_client, researcher):
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return api_client


def _create(batch, researcher, django_capture_on_commit_callbacks, filters=NO_FILTERS, **options) -> Job:
    with django_capture_on_commit_callbacks(execute=True):
        return export_jobs.sessions_export_job_create(batch=batch, user=researcher, filters=filters, **options)


def _file_bytes(job: Job) -> bytes:
    job.refresh_from_db()
    with job.result_file.open("rb") as handle:
        return handle.read()


def _completed(batch, **filters):
    return Session.objects.filter(batch=batch, status=Session.Status.COMPLETED, **filters)


# --- the task and its file ---------------------------------------------------------------------------


def test_task_writes_every_completed_session_once(batch, researcher, annotator, queued,
                                                  django_capture_on_commit_callbacks):
    job = _create(batch, researcher, django_capture_on_commit_callbacks)
    assert queued == [job.id] and Job.objects.get(pk=job.id).status == Job.Status.QUEUED

    export_tasks.sessions_export(job.id)  # what the worker does

    job.refresh_from_db()
    content = _file_bytes(job)
    records = [json.loads(line) for line in content.decode().splitlines()]
    ids = [record["session_id"] for record in records]
    expected = set(_completed(batch).values_list("id", flat=True))
    assert len(ids) == len(set(ids)) == len(expected) and set(ids) == expected
    assert (job.status, job.progress, job.error) == (Job.Status.SUCCEEDED, 1.0, "")
    assert job.report["sessions"] == len(expected) and job.report["bytes"] == len(content)
    assert job.report["download_url"] == f"/api/batches/{batch.id}/exports/{job.id}/download/"
    assert job.report["filename"] == "pilot-study-sessions.jsonl" and job.result_file.name.startswith("jobs/")
    # The same bytes as the direct export: no field (ground truth included) beyond what it already carries.
    assert content == exports.build_export(batch, "sessions", "jsonl").read()
    sessions = {s.id: s for s in selectors.export_sessions(batch)}
    for record in records:
        assert set(record) == set(session_record(sessions[record["session_id"]]))
        assert record["annotator"] == annotator.pseudonym
    assert SECRET.encode() not in content and annotator.username.encode() not in content


def test_filters_fire_format_and_gzip(batch, researcher, queued, django_capture_on_commit_callbacks):
    filters = ReportFilters(category="Visual Logic", outcome=0)
    job = _create(batch, researcher, django_capture_on_commit_callbacks, filters=filters, fmt="fire", compress=True)
    assert job.params["filters"] == {"category": "Visual Logic", "outcome": "0"}

    export_tasks.sessions_export(job.id)

    job.refresh_from_db()
    assert job.report["filename"].endswith(".fire.jsonl.gz")
    content = gzip.decompress(_file_bytes(job))
    assert content == exports.build_export(batch, "sessions", "fire", filters).read()
    wanted = _completed(batch, task__category="Visual Logic", corrected_round=0)
    ids = sorted(int(json.loads(line)["id"].rsplit("-", 1)[1]) for line in content.decode().splitlines())
    assert ids == sorted(wanted.values_list("id", flat=True)) and job.report["sessions"] == wanted.count() > 0


def test_date_filter_round_trips_through_the_job(batch, researcher, queued, django_capture_on_commit_callbacks):
    filters = ReportFilters(date_from=dt.date(2025, 4, 1), date_to=dt.date(2025, 4, 30))
    job = _create(batch, researcher, django_capture_on_commit_callbacks, filters=filters)
    export_tasks.sessions_export(job.id)
    lines = _file_bytes(job).decode().splitlines()
    april = _completed(batch, completed_at__date__gte=dt.date(2025, 4, 1))
    assert {json.loads(line)["session_id"] for line in lines} == set(april.values_list("id", flat=True))
    assert 0 < len(lines) < _completed(batch).count()


def test_progress_is_written_every_n_sessions_not_per_row(batch, researcher, queued, monkeypatch,
                                                          django_capture_on_commit_callbacks):
    monkeypatch.setattr(export_jobs, "PROGRESS_EVERY", 5)
    seen = []
    original = export_jobs._progress

    def spy(job, done, expected):
        original(job, done, expected)
        row = Job.objects.get(pk=job.pk)
        seen.append((done, row.status, row.progress, row.message))

    monkeypatch.setattr(export_jobs, "_progress", spy)
    job = _create(batch, researcher, django_capture_on_commit_callbacks)
    export_tasks.sessions_export(job.id)

    total = _completed(batch).count()
    assert [done for done, *_ in seen] == list(range(0, total + 1, 5))  # the start, then every 5th session
    assert len(seen) < total
    assert all(status == Job.Status.RUNNING for _, status, _, _ in seen)
    progresses = [progress for _, _, progress, _ in seen]
    assert progresses == sorted(progresses) and progresses[-1] < 1.0
    assert seen[1][3] == f"Wrote 5 of about {total} sessions"
    job.refresh_from_db()
    assert job.progress == 1.0 and job.message.startswith(f"Exported {total} sessions")


def test_task_is_idempotent(batch, researcher, queued, django_capture_on_commit_callbacks, media):
    job = _create(batch, researcher, django_capture_on_commit_callbacks)
    export_tasks.sessions_export(job.id)
    job.refresh_from_db()
    first_name, first_finished = job.result_file.name, job.finished_at

    assert export_jobs.sessions_export_job_run(job_id=job.id) is None  # a redelivery finds it done
    job.refresh_from_db()
    assert (job.result_file.name, job.finished_at) == (first_name, first_finished)
    assert len(list((media / "jobs" / "exports").iterdir())) == 1


def test_running_job_is_left_alone_unless_stale(batch, researcher, queued, settings,
                                                django_capture_on_commit_callbacks):
    job = _create(batch, researcher, django_capture_on_commit_callbacks)
    Job.objects.filter(pk=job.id).update(status=Job.Status.RUNNING, started_at=Job.objects.get(pk=job.id).created_at)
    assert export_jobs.sessions_export_job_run(job_id=job.id) is None  # a live worker holds it

    long_ago = Job.objects.get(pk=job.id).created_at - dt.timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 1)
    Job.objects.filter(pk=job.id).update(started_at=long_ago)  # its worker died: a redelivery takes it over
    taken = export_jobs.sessions_export_job_run(job_id=job.id)
    assert taken is not None and taken.status == Job.Status.SUCCEEDED
    assert taken.report["sessions"] == _completed(batch).count()


def test_an_error_fails_the_job_with_its_message(batch, researcher, queued, monkeypatch,
                                                 django_capture_on_commit_callbacks):
    job = _create(batch, researcher, django_capture_on_commit_callbacks)
    with mock.patch.object(exports, "build_export", side_effect=ValueError("disk on fire")):
        with pytest.raises(ValueError):
            export_tasks.sessions_export(job.id)
    job.refresh_from_db()
    assert (job.status, job.error, job.message) == (Job.Status.FAILED, "ValueError: disk on fire", "Failed")
    assert not job.result_file and job.finished_at is not None


def test_a_database_error_requeues_the_job_for_a_retry(batch, researcher, queued,
                                                       django_capture_on_commit_callbacks):
    job = _create(batch, researcher, django_capture_on_commit_callbacks)
    with mock.patch.object(exports, "build_export", side_effect=OperationalError("connection lost")):
        with pytest.raises(OperationalError):  # called directly, Celery's retry re-raises the error
            export_tasks.sessions_export(job.id)
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED and "retried" in job.message
    export_tasks.sessions_export(job.id)  # the retry
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.report["sessions"] == _completed(batch).count()


def test_time_limit_and_deleted_batch_fail_clearly(batch, researcher, queued, django_capture_on_commit_callbacks):
    from celery.exceptions import SoftTimeLimitExceeded

    job = _create(batch, researcher, django_capture_on_commit_callbacks)
    with mock.patch.object(exports, "build_export", side_effect=SoftTimeLimitExceeded()):
        export_tasks.sessions_export(job.id)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "narrow it with filters" in job.error

    other = _create(batch, researcher, django_capture_on_commit_callbacks)
    Job.objects.filter(pk=other.id).update(batch=None)
    export_tasks.sessions_export(other.id)
    other.refresh_from_db()
    assert other.status == Job.Status.FAILED and "no longer exists" in other.error


def test_broker_down_fails_the_job_and_never_runs_it_in_process(token_client, batch, monkeypatch,
                                                                django_capture_on_commit_callbacks):
    def unreachable(*args, **kwargs):
        raise BrokerError("Error 111 connecting to redis:6379. Connection refused.")

    monkeypatch.setattr("annotate.queue_contract.send_task", unreachable)
    with mock.patch.object(export_jobs, "sessions_export_job_run") as run:
        with django_capture_on_commit_callbacks(execute=True):
            response = token_client.post(f"/api/batches/{batch.id}/exports/sessions/", {}, format="json")
    assert response.status_code == 202
    job = token_client.get(response["Location"]).json()
    assert job["status"] == "failed" and job["done"]
    assert "could not be queued" in job["error"] and "Connection refused" in job["error"]
    assert not run.called and not Job.objects.get(pk=job["id"]).result_file


# --- API ---------------------------------------------------------------------------------------------


def test_api_happy_path_create_poll_download(token_client, batch, queued, django_capture_on_commit_callbacks,
                                             django_assert_max_num_queries):
    with django_capture_on_commit_callbacks(execute=True), django_assert_max_num_queries(8):
        response = token_client.post(f"/api/batches/{batch.id}/exports/sessions/",
                                     {"format": "jsonl", "model": "model-b"}, format="json")
    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["kind"] == "export" and body["status"] == "queued" and queued == [body["id"]]
    assert response["Location"] == body["url"] == f"/api/jobs/{body['id']}/"
    assert token_client.get(body["url"]).json()["done"] is False

    export_tasks.sessions_export(body["id"])

    job = token_client.get(body["url"]).json()
    assert (job["status"], job["progress"], job["done"]) == ("succeeded", 1.0, True)
    assert job["report"]["sessions"] == _completed(batch, model_config__name="model-b").count()
    # The evaluation app's own job route says the same.
    assert token_client.get(f"/api/batches/{batch.id}/jobs/{body['id']}/").json()["report"] == job["report"]
    download = token_client.get(job["report"]["download_url"])
    assert download.status_code == 200
    assert download["Content-Disposition"] == 'attachment; filename="pilot-study-sessions.jsonl"'
    content = b"".join(download.streaming_content)
    assert content == exports.build_export(batch, "sessions", "jsonl", ReportFilters(model="model-b")).read()


def test_api_filters_in_the_query_string_and_gzip_download(token_client, batch, queued,
                                                            django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = token_client.post(f"/api/batches/{batch.id}/exports/sessions/?category=Math+(Text)",
                                     {"gzip": True}, format="json")
    assert response.status_code == 202
    export_tasks.sessions_export(response.json()["id"])
    url = token_client.get(response["Location"]).json()["report"]["download_url"]
    download = token_client.get(url)
    assert download["Content-Type"] == "application/gzip"
    lines = gzip.decompress(b"".join(download.streaming_content)).decode().splitlines()
    assert len(lines) == _completed(batch, task__category="Math (Text)").count() > 0


def test_api_outsiders(api_client, batch, researcher, annotator, queued, django_capture_on_commit_callbacks):
    job = _create(batch, researcher, django_capture_on_commit_callbacks)
    export_tasks.sessions_export(job.id)
    create, download = f"/api/batches/{batch.id}/exports/sessions/", f"/api/batches/{batch.id}/exports/{job.id}/download/"

    api_client.force_authenticate(annotator)  # not a researcher
    assert api_client.post(create, {}, format="json").status_code == 403
    assert api_client.get(download).status_code == 404
    assert api_client.get(f"/api/jobs/{job.id}/").status_code == 403

    api_client.force_authenticate(UserFactory(username="rachel", role=User.Role.RESEARCHER))  # not a member
    assert api_client.post(create, {}, format="json").status_code == 404
    assert api_client.get(download).status_code == 404
    assert api_client.get(f"/api/jobs/{job.id}/").status_code == 404
    assert api_client.post("/api/batches/999999/exports/sessions/", {}, format="json").status_code == 404

    other = make_batch(models=[], tasks=0, members=[researcher])  # the job is not in that batch
    api_client.force_authenticate(researcher)
    assert api_client.get(f"/api/batches/{other.id}/exports/{job.id}/download/").status_code == 404

    api_client.force_authenticate(UserFactory(username="ada", role=User.Role.ADMIN))  # admins read every batch
    assert api_client.get(download).status_code == 200
    api_client.force_authenticate(None)
    assert api_client.get(download).status_code in (401, 403)
    assert Job.objects.filter(kind=Job.Kind.EXPORT).count() == 1  # refused requests made no job


def test_api_bad_input_is_a_400_naming_it(token_client, batch, queued, django_capture_on_commit_callbacks):
    url = f"/api/batches/{batch.id}/exports/sessions/"
    with django_capture_on_commit_callbacks(execute=True):
        bad_date = token_client.post(url, {"date_from": "yesterday"}, format="json")
        bad_format = token_client.post(url, {"format": "xml"}, format="json")
        bad_outcome = token_client.post(url, {"outcome": "7"}, format="json")
        nobody = token_client.post(url, {"annotator": "ann-nobody"}, format="json")
        reversed_dates = token_client.post(url, {"date_from": "2025-05-01", "date_to": "2025-04-01"}, format="json")
    assert bad_date.status_code == 400 and "date_from" in bad_date.json()["detail"]
    assert bad_format.status_code == 400 and "format" in bad_format.json()
    assert bad_outcome.status_code == 400 and "outcome" in bad_outcome.json()["detail"]
    assert nobody.status_code == 400 and "No annotator with pseudonym 'ann-nobody'" in nobody.json()["detail"]
    assert reversed_dates.status_code == 400 and "date_from is after date_to" in reversed_dates.json()["detail"]
    assert not Job.objects.filter(kind=Job.Kind.EXPORT).exists() and queued == []


def test_download_of_an_unfinished_or_failed_job(token_client, batch, researcher, queued,
                                                 django_capture_on_commit_callbacks):
    job = _create(batch, researcher, django_capture_on_commit_callbacks)
    url = f"/api/batches/{batch.id}/exports/{job.id}/download/"
    response = token_client.get(url)
    assert response.status_code == 409 and "queued" in response.json()["detail"]
    job_fail(job_id=job.id, error="boom")
    assert "boom" in token_client.get(url).json()["detail"]


def test_download_streams_under_asgi(researcher, batch, queued, django_capture_on_commit_callbacks):
    from asgiref.sync import async_to_sync

    job = _create(batch, researcher, django_capture_on_commit_callbacks)
    export_tasks.sessions_export(job.id)
    client = AsyncClient()

    async def fetch():
        await client.aforce_login(researcher)
        response = await client.get(f"/api/batches/{batch.id}/exports/{job.id}/download/")
        return response, [chunk async for chunk in response.streaming_content]

    response, chunks = async_to_sync(fetch)()
    assert response.status_code == 200 and response.is_async
    assert b"".join(chunks) == _file_bytes(job) and response["Content-Length"] == str(len(_file_bytes(job)))


# --- pages -------------------------------------------------------------------------------------------


def test_report_page_button_queues_the_job_and_its_page_shows_progress_then_the_link(
    client, researcher, batch, queued, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    html = client.get(f"/research/batches/{batch.id}/", {"model": "model-a"}).content.decode()
    assert "Export sessions (JSONL)" in html and "js/export_job.js" in html
    assert f'action="/research/batches/{batch.id}/exports/sessions/?model=model-a"' in html
    assert f'data-api-url="/api/batches/{batch.id}/exports/sessions/?model=model-a"' in html

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/research/batches/{batch.id}/exports/sessions/?model=model-a", {"format": "fire"})
    job = Job.objects.get(kind=Job.Kind.EXPORT)
    assert response.status_code == 302 and response["Location"] == f"/research/batches/{batch.id}/exports/{job.id}/"
    assert queued == [job.id] and job.params == {"export": "sessions", "format": "fire", "gzip": False,
                                                 "filters": {"model": "model-a"}}
    page = client.get(response["Location"]).content.decode()
    assert f'data-job-url="/api/jobs/{job.id}/"' in page and "Waiting for a worker" in page and "model=model-a" in page

    export_tasks.sessions_export(job.id)
    page = client.get(response["Location"]).content.decode()
    assert f'href="/api/batches/{batch.id}/exports/{job.id}/download/"' in page
    assert "pilot-study-sessions.fire.jsonl" in page and 'data-done="true"' in page


def test_page_outsiders_and_bad_filters(client, researcher, annotator, batch, queued,
                                        django_capture_on_commit_callbacks):
    job = _create(batch, researcher, django_capture_on_commit_callbacks)
    client.force_login(annotator)
    assert client.post(f"/research/batches/{batch.id}/exports/sessions/").status_code == 403
    assert client.get(f"/research/batches/{batch.id}/exports/{job.id}/").status_code == 403
    client.force_login(UserFactory(username="rachel", role=User.Role.RESEARCHER))
    assert client.post(f"/research/batches/{batch.id}/exports/sessions/").status_code == 404
    assert client.get(f"/research/batches/{batch.id}/exports/{job.id}/").status_code == 404

    client.force_login(researcher)
    response = client.post(f"/research/batches/{batch.id}/exports/sessions/?date_from=yesterday", follow=True)
    assert "Bad filter: date_from" in response.content.decode()
    assert Job.objects.filter(kind=Job.Kind.EXPORT).count() == 1 and queued == [job.id]


def test_direct_session_downloads_stop_at_the_limit(client, token_client, researcher, batch, monkeypatch):
    client.force_login(researcher)
    assert client.get(f"/research/batches/{batch.id}/export/sessions.jsonl").status_code == 200
    monkeypatch.setattr(exports, "DIRECT_SESSIONS_LIMIT", _completed(batch).count() - 1)
    page = client.get(f"/research/batches/{batch.id}/export/sessions.jsonl")
    assert page.status_code == 400 and "Export them as a background job" in page.content.decode()
    api = token_client.get(f"/api/batches/{batch.id}/sessions.fire.jsonl")
    assert api.status_code == 400 and f"POST /api/batches/{batch.id}/exports/sessions/" in api.json()["detail"]
    # A filtered selection under the limit still downloads directly.
    assert token_client.get(f"/api/batches/{batch.id}/sessions.jsonl", {"model": "model-b"}).status_code == 200


def test_openapi_schema_has_the_export_job_routes(token_client):
    response = token_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    paths = json.loads(response.content)["paths"]
    assert "post" in paths["/api/batches/{batch_id}/exports/sessions/"]
    assert "get" in paths["/api/batches/{batch_id}/exports/{job_id}/download/"]


# --- end to end --------------------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_exports_the_sessions(api_client, researcher, annotator, celery_worker_process):
    model = ModelConfigFactory(name="model-e2e")
    batch = make_batch(models=[model], tasks=0, members=[researcher])
    sessions_from_counts(batch, model, "Visual Logic", (3, 2, 1, 1), 12, annotators=(annotator,), with_rounds=True)
    api_client.force_authenticate(researcher)

    response = api_client.post(f"/api/batches/{batch.id}/exports/sessions/", {"gzip": True}, format="json")
    assert response.status_code == 202, response.json()
    deadline, job = time.monotonic() + 60, {}
    while time.monotonic() < deadline:
        job = api_client.get(response["Location"]).json()
        if job["done"]:
            break
        time.sleep(0.2)
    assert job.get("status") == "succeeded", job
    download = api_client.get(job["report"]["download_url"])
    lines = gzip.decompress(b"".join(download.streaming_content)).decode().splitlines()
    assert sorted(json.loads(line)["session_id"] for line in lines) == sorted(
        _completed(batch).values_list("id", flat=True))
    Job.objects.get(pk=job["id"]).result_file.delete(save=False)  # the worker wrote it under the real MEDIA_ROOT


def test_task_queries_do_not_grow_with_sessions(batch, researcher, annotator, queued,
                                                django_capture_on_commit_callbacks):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def run() -> int:
        job = _create(batch, researcher, django_capture_on_commit_callbacks)
        with CaptureQueriesContext(connection) as captured:
            export_tasks.sessions_export(job.id)
        job.refresh_from_db()
        assert job.report["sessions"] == _completed(batch).count()
        return len(captured)

    before = run()
    model = batch.models_to_evaluate.get(name="model-a")
    sessions_from_counts(batch, model, "Visual Logic", (9, 9, 9, 9), 40, annotators=(annotator,), with_rounds=True)
    assert run() == before  # no query per session (rounds, tasks and images are prefetched per chunk)


def test_progress_without_counters_still_counts_written_sessions(researcher, annotator, media, queued, monkeypatch,
                                                                 django_capture_on_commit_callbacks):
    model = ModelConfigFactory(name="model-uncounted")
    batch = make_batch(models=[model], tasks=0, members=[researcher])
    sessions_from_counts(batch, model, "Visual Logic", (2, 1, 1, 0), 7, annotators=(annotator,), with_rounds=True)
    # No recount: the counters the estimate reads are empty, the export still reads the sessions themselves.
    monkeypatch.setattr(export_jobs, "PROGRESS_EVERY", 3)
    messages = []
    original = export_jobs._progress
    monkeypatch.setattr(export_jobs, "_progress", lambda job, done, expected: (
        original(job, done, expected), messages.append(Job.objects.get(pk=job.pk).message)))
    job = _create(batch, researcher, django_capture_on_commit_callbacks)
    export_tasks.sessions_export(job.id)
    job.refresh_from_db()
    total = _completed(batch).count()
    assert messages == [f"Wrote {done} sessions" for done in range(0, total + 1, 3)]
    assert job.report == {**job.report, "sessions": total, "expected": 0}
    assert job.result_file.name == f"jobs/exports/sessions-{job.id}.jsonl"
