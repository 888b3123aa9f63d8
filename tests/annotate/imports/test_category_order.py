"""A batch's category order: the order its categories first appear in the file, or the one given at import (the
form, the command, the API), with the categories left out after it. Unknown names are an error naming them."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from annotate.errors import ApplicationError
from annotate.imports.batches import batch_import, batch_settings_apply
from annotate.imports.jobs import import_job_run
from annotate.models import Batch, Job
from tests.annotate.imports.files import jsonl_bytes, task

pytestmark = pytest.mark.django_db

# First appearance: MathVerse, Visual Logic, Coding (Text), MMMU-Pro
RECORDS = [
    task("mv-1", category="MathVerse"),
    task("vl-1", category="Visual Logic"),
    task("mv-2", category="MathVerse"),
    task("ct-1", category="Coding (Text)"),
    task("mp-1", category="MMMU-Pro"),
]


@pytest.fixture
def tasks_file(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(jsonl_bytes(RECORDS))
    return path


def _order(name: str) -> list[str]:
    return Batch.objects.get(name=name).category_order


def test_default_is_the_order_of_first_appearance(tasks_file):
    report = batch_import(path=tasks_file, name="plain", kind="interfeedback")
    assert report.ok, report.render()
    assert _order("plain") == ["MathVerse", "Visual Logic", "Coding (Text)", "MMMU-Pro"]


def test_given_order_first_then_the_rest_as_they_appear(tasks_file):
    report = batch_import(path=tasks_file, name="given", kind="interfeedback",
                          settings={"category_order": " Visual Logic , MMMU-Pro,Visual Logic"})
    assert report.ok, report.render()
    assert _order("given") == ["Visual Logic", "MMMU-Pro", "MathVerse", "Coding (Text)"]


def test_reimport_keeps_the_order_and_a_new_order_replaces_it(tasks_file):
    batch_import(path=tasks_file, name="again", kind="interfeedback", settings={"category_order": ["MMMU-Pro"]})
    again = batch_import(path=tasks_file, name="again", kind="interfeedback")
    assert again.status == "unchanged"
    assert _order("again") == ["MMMU-Pro", "MathVerse", "Visual Logic", "Coding (Text)"]
    changed = batch_import(path=tasks_file, name="again", kind="interfeedback",
                           settings={"category_order": "Coding (Text),Visual Logic"})
    assert changed.ok and changed.counts.get("settings_updated") == 1
    assert _order("again") == ["Coding (Text)", "Visual Logic", "MathVerse", "MMMU-Pro"]


def test_unknown_categories_are_named_and_nothing_is_written(tasks_file):
    report = batch_import(path=tasks_file, name="bad", kind="interfeedback",
                          settings={"category_order": "Visual Logic,Math (Text),Charts"})
    assert [str(p) for p in report.problems] == [
        "field settings.category_order: unknown categories 'Math (Text)', 'Charts'; the batch's categories: "
        "'MathVerse', 'Visual Logic', 'Coding (Text)', 'MMMU-Pro'"]
    assert not Batch.objects.filter(name="bad").exists()


def test_not_a_list_of_names_is_an_error(tasks_file):
    report = batch_import(path=tasks_file, name="bad", kind="interfeedback", settings={"category_order": [1, 2]})
    assert [p.field for p in report.problems] == ["settings.category_order"]


def test_the_command_takes_category_order(tasks_file):
    call_command("import_batch", str(tasks_file), "--name", "cmd", "--category-order", "MMMU-Pro,MathVerse",
                 "--no-progress")
    assert _order("cmd") == ["MMMU-Pro", "MathVerse", "Visual Logic", "Coding (Text)"]
    with pytest.raises(CommandError):
        call_command("import_batch", str(tasks_file), "--name", "cmd-bad", "--category-order", "Nope",
                     "--no-progress")
    assert not Batch.objects.filter(name="cmd-bad").exists()


def test_the_api_takes_category_order(api_client, admin_user):
    api_client.force_authenticate(admin_user)
    response = api_client.post("/api/imports/", {"file": SimpleUploadedFile("t.jsonl", jsonl_bytes(RECORDS)),
                                                 "name": "via-api", "category_order": "Coding (Text),MMMU-Pro"},
                               format="multipart")
    assert response.status_code == 202, response.json()
    import_job_run(job_id=response.json()["job_id"])
    assert _order("via-api") == ["Coding (Text)", "MMMU-Pro", "MathVerse", "Visual Logic"]

    bad = api_client.post("/api/imports/", {"file": SimpleUploadedFile("t.jsonl", jsonl_bytes(RECORDS)),
                                            "name": "api-bad", "category_order": "Charts"}, format="multipart")
    job = Job.objects.get(pk=bad.json()["job_id"])
    import_job_run(job_id=job.pk)
    body = api_client.get(f"/api/imports/{job.pk}/").json()
    assert "unknown category 'Charts'" in str(body)
    assert not Batch.objects.filter(name="api-bad").exists()


def test_the_form_takes_category_order(client, admin_user, django_capture_on_commit_callbacks):
    client.force_login(admin_user)
    assert b'name="category_order"' in client.get("/imports/new/").content
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post("/imports/new/", {
            "file": SimpleUploadedFile("t.jsonl", jsonl_bytes(RECORDS)), "name": "via-form", "kind": "interfeedback",
            "category_order": "Visual Logic, Coding (Text)",
        })
    assert response.status_code == 302
    import_job_run(job_id=Job.objects.get().pk)
    assert _order("via-form") == ["Visual Logic", "Coding (Text)", "MathVerse", "MMMU-Pro"]


def test_settings_after_import_check_the_batch_categories(tasks_file):
    batch_import(path=tasks_file, name="later", kind="interfeedback")
    batch = batch_settings_apply(batch=Batch.objects.get(name="later"), settings={"category_order": "MMMU-Pro"})
    assert batch.category_order == ["MMMU-Pro", "MathVerse", "Visual Logic", "Coding (Text)"]
    with pytest.raises(ApplicationError, match="unknown category 'Charts'"):
        batch_settings_apply(batch=batch, settings={"category_order": "Charts"})


def test_the_migration_fills_existing_batches_in_order_of_first_appearance(tasks_file):
    import importlib

    from django.apps import apps

    batch_import(path=tasks_file, name="old", kind="interfeedback")
    Batch.objects.filter(name="old").update(category_order=[])
    importlib.import_module("annotate.migrations.0016_batch_category_order").fill_category_order(apps, None)
    assert _order("old") == ["MathVerse", "Visual Logic", "Coding (Text)", "MMMU-Pro"]
