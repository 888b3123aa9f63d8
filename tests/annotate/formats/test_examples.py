"""Every file in docs/reference/examples/ follows its JSON Schema and imports exactly as it is: through the
import_batch command and through the import API (batch files), the study command's settings and the study API
(study settings), the users command and the people API (the people CSV)."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from jsonschema import Draft202012Validator

from annotate.formats.schemas import SCHEMAS
from annotate.imports.jobs import import_job_run
from annotate.models import Batch, Conversation, Job, Task, User
from tests.annotate.formats.examples import EXAMPLE_FILES, EXAMPLES, Example, records_of

BATCH_FILES = [e for e in EXAMPLE_FILES if e.kind]


def _ids(examples):
    return [e.file for e in examples]


def test_every_example_file_is_listed_and_every_listed_file_exists():
    assert sorted(p.name for p in EXAMPLES.iterdir()) == sorted(e.file for e in EXAMPLE_FILES)


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=_ids(EXAMPLE_FILES))
def test_each_example_follows_its_schema(example: Example):
    validator = Draft202012Validator(SCHEMAS[example.schema])
    records = records_of(example)
    assert records
    problems = [f"record {i + 1}: {error.json_path}: {error.message}"
                for i, record in enumerate(records) for error in validator.iter_errors(record)]
    assert not problems, "\n".join(problems)


def test_the_tasks_example_has_twenty_tasks_two_of_them_gold_and_scorable():
    tasks = records_of(EXAMPLE_FILES[0])
    gold = [t for t in tasks if t.get("gold")]
    assert len(tasks) == 20 and len(gold) == 2
    ordinary = {(t["answer_type"], t["category"]) for t in tasks if not t.get("gold")}
    assert all((t["answer_type"], t["category"]) in ordinary for t in gold)  # a check looks like any item
    assert {("gold_check_type" in t["meta"]) or bool(t["meta"].get("gold_feedback_terms")) for t in gold} == {True}


def _items(batch: Batch) -> int:
    return Task.objects.filter(batch=batch).count() + Conversation.objects.filter(batch=batch).count()


def _expected_items(example: Example) -> int:
    return len(records_of(example))


@pytest.mark.django_db
@pytest.mark.parametrize("example", BATCH_FILES, ids=_ids(BATCH_FILES))
def test_each_batch_example_imports_through_the_command(example: Example, settings, tmp_path, capsys):
    settings.MEDIA_ROOT = tmp_path / "media"
    args = [str(EXAMPLES / example.file), "--name", f"cmd-{example.file}", "--kind", example.kind, "--json",
            "--no-progress"]
    if "map" in example.options:
        args += ["--map", example.options["map"]]
    call_command("import_batch", *args)
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "imported" and report["problems"] == []
    assert not [w for w in report["warnings"] if "not a known field" in w or "field" in w and "is not a" in w]
    assert _items(Batch.objects.get(name=f"cmd-{example.file}")) == _expected_items(example)


@pytest.mark.django_db
@pytest.mark.parametrize("example", BATCH_FILES, ids=_ids(BATCH_FILES))
def test_each_batch_example_imports_through_the_api(example: Example, api_client, admin_user, settings, tmp_path,
                                                    django_capture_on_commit_callbacks):
    settings.MEDIA_ROOT = tmp_path / "media"
    api_client.force_authenticate(admin_user)
    fields = {"file": SimpleUploadedFile(example.file, (EXAMPLES / example.file).read_bytes()),
              "name": f"api-{example.file}", "kind": example.kind, **example.options}
    with django_capture_on_commit_callbacks(execute=False):
        response = api_client.post("/api/imports/", fields, format="multipart")
    assert response.status_code == 202, response.json()
    import_job_run(job_id=response.json()["job_id"])
    job = Job.objects.get(pk=response.json()["job_id"])
    assert job.status == Job.Status.SUCCEEDED, job.report
    assert job.report["problems"] == [] and job.report["status"] == "imported"
    assert _items(Batch.objects.get(name=f"api-{example.file}")) == _expected_items(example)


@pytest.mark.django_db
def test_the_study_settings_example_goes_in_with_an_import_and_through_the_api(api_client, admin_user, settings,
                                                                              tmp_path, capsys):
    settings.MEDIA_ROOT = tmp_path / "media"
    study = EXAMPLES / "study-settings.json"
    call_command("import_batch", str(EXAMPLES / "tasks.jsonl"), "--name", "with-study", "--study", str(study),
                 "--json", "--no-progress")
    assert json.loads(capsys.readouterr().out)["problems"] == []
    batch = Batch.objects.get(name="with-study")
    given = json.loads(study.read_text())
    assert [q["id"] for q in batch.study.screening] == [q["id"] for q in given["screening"]]
    assert batch.gold_rate == given["attention_rate"]

    api_client.force_authenticate(admin_user)
    batch.members.add(admin_user)
    response = api_client.patch(f"/api/batches/{batch.pk}/study/", given, format="json")
    assert response.status_code == 200, response.json()
    document = api_client.get(f"/api/batches/{batch.pk}/study/").json()
    questions = ("screening", "pre_survey", "post_survey")  # given back with their defaults filled in
    assert {k: document[k] for k in given if k not in questions} == {k: v for k, v in given.items()
                                                                   if k not in questions}
    assert {k: [q["id"] for q in document[k]] for k in questions} == {k: [q["id"] for q in given[k]]
                                                                      for k in questions}
    # the document the API gives back follows the same schema (its read-only keys included)
    assert not list(Draft202012Validator(SCHEMAS["study-settings"]).iter_errors(document))


@pytest.mark.django_db
def test_the_people_example_goes_in_through_the_command_and_the_api(api_client, admin_user, capsys):
    call_command("users", "add", "--role", "annotator", "--from", str(EXAMPLES / "people.csv"))
    people = records_of(next(e for e in EXAMPLE_FILES if e.file == "people.csv"))
    created = User.objects.filter(username__in=[p["username"] for p in people])
    assert {(u.username, u.email, u.role) for u in created} == {
        (p["username"], p.get("email", ""), User.Role.ANNOTATOR) for p in people}

    api_client.force_authenticate(admin_user)
    body = {"role": "researcher", "users": [{**p, "username": p["username"] + "-r"} for p in people]}
    response = api_client.post("/api/users/", body, format="json")
    assert response.status_code == 201, response.json()
    assert len(response.json()) == len(people)
