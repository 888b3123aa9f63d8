"""The import pages as a newcomer reads them (issue 31 item 5): human labels instead of raw keys, the batch named
with a link, a failed dry run that never says "created", problems without raw backticks, a failed import's
settings filled in again, and the fields of each kind marked so the page can show only those."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.imports.jobs import import_job_run
from annotate.models import Batch, Job
from tests.annotate.imports.files import jsonl_bytes, task
from tests.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db

RAW_KEYS = ("images_new", "work_items_new", "settings_updated")


def upload(client, records, **fields):
    response = client.post("/imports/new/", {
        "file": SimpleUploadedFile("pilot.jsonl", jsonl_bytes(records)), "name": "pilot", "kind": "interfeedback",
        **fields})
    assert response.status_code == 302, response.content.decode()[:2000]
    job = Job.objects.latest("id")
    import_job_run(job_id=job.pk)
    job.refresh_from_db()
    return job, client.get(f"/imports/{job.pk}/").content.decode()


def visible_text(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


def test_a_successful_import_reads_in_words_and_links_its_batch(client, admin_user, no_dispatch):
    model = ModelConfigFactory(name="m1")
    client.force_login(admin_user)
    job, page = upload(client, [task("a"), task("b")], models=[model.pk], overlap=1)
    batch = Batch.objects.get(name="pilot")
    text = visible_text(page)
    assert "Imported." in text
    assert "Tasks in the file" in text and "Tasks created" in text and "New work items (task × model)" in text
    assert not any(key in text for key in RAW_KEYS)
    assert re.search(rf'<a href="/research/batches/{batch.id}/" id="import-batch">pilot</a>', page), page
    listing = client.get("/imports/new/").content.decode()
    assert f'href="/research/batches/{batch.id}/">pilot</a>' in listing  # the recent imports link it too
    assert not any(key in visible_text(listing) for key in RAW_KEYS)


def test_a_failed_dry_run_never_says_created(client, admin_user):
    client.force_login(admin_user)
    job, page = upload(client, [task("a"), task("b", answer="Z"), task("c")], dry_run="on")
    assert job.status == Job.Status.FAILED
    text = visible_text(page)
    assert "1 problem found; nothing was imported." in text
    assert "created" not in text.lower() and "What the import" not in text
    assert 'id="import-batch"' not in page
    assert "line 2, field answer" in text


def test_a_valid_dry_run_says_what_it_would_do(client, admin_user):
    client.force_login(admin_user)
    _, page = upload(client, [task("a")], dry_run="on")
    text = visible_text(page)
    assert "Dry run: the file is valid; nothing was written." in text and "What the import would do" in text
    assert 'id="import-batch"' not in page and not Batch.objects.filter(name="pilot").exists()
    assert "Import it for real" in text


def test_problems_show_code_as_code_never_raw_backticks(client, admin_user):
    job = Job.objects.create(kind=Job.Kind.IMPORT, status=Job.Status.FAILED, params={"name": "x", "kind": "fire"},
                             report={"status": "invalid", "problem_total": 1, "counts": {"conversations": 2},
                                     "problems": [{"text": "images: upload the zip in the field (API: `images`)"}]})
    client.force_login(admin_user)
    page = client.get(f"/imports/{job.pk}/").content.decode()
    assert "(API: <code>images</code>)" in page and "`" not in visible_text(page)


def test_a_failed_import_keeps_every_field_for_the_next_try(client, admin_user):
    model = ModelConfigFactory(name="m1")
    client.force_login(admin_user)
    job, page = upload(client, [task("a", answer="Z")], models=[model.pk], overlap=2, gold_rate=0.25,
                       annotators="", instructions="Say what is wrong.", category_order="Visual Logic",
                       seed=42, max_rounds=2)
    assert job.status == Job.Status.FAILED and f'href="/imports/new/?again={job.pk}"' in page
    form = client.get(f"/imports/new/?again={job.pk}").content.decode()
    assert 'id="import-again-note"' in form
    assert re.search(r'name="name"[^>]*value="pilot"', form)
    assert re.search(r'name="overlap"[^>]*value="2"', form) and re.search(r'name="seed"[^>]*value="42"', form)
    assert re.search(r'name="max_rounds"[^>]*value="2"', form) and re.search(r'name="gold_rate"[^>]*value="0.25"', form)
    assert "Say what is wrong.</textarea>" in form
    assert re.search(rf'name="models" value="{model.pk}"[^>]*checked', form)
    # A form refused at once (bad settings) keeps what was typed too, and says to choose the file again.
    response = client.post("/imports/new/", {"file": SimpleUploadedFile("t.jsonl", b"{}\n"), "name": "kept",
                                             "kind": "rows", "column_map": "wrong=x", "overlap": 3})
    html = response.content.decode()
    assert response.status_code == 400 and 'id="choose-again-note"' in html
    assert re.search(r'name="name"[^>]*value="kept"', html) and re.search(r'name="overlap"[^>]*value="3"', html)


def test_the_form_marks_the_fields_of_each_kind(client, admin_user):
    client.force_login(admin_user)
    page = client.get("/imports/new/").content.decode()
    assert re.search(r'id="field-column_map" data-kinds="rows"', page)
    assert re.search(r'id="field-images" data-kinds="fire preference"', page)
    assert re.search(r'id="field-models" data-kinds="interfeedback rows"', page)
    assert re.search(r'id="field-annotators">', page)  # every kind: no data-kinds
    assert "js/import_form.js" in page


def test_a_preference_import_counts_items_and_responses(client, admin_user):
    client.force_login(admin_user)
    items = b'{"id": "p1", "question": "7 + 5?", "responses": ["12", "13"]}\n' \
            b'{"id": "p2", "question": "Sky colour?", "responses": ["blue", "green", "red"]}\n'
    response = client.post("/imports/new/", {"file": SimpleUploadedFile("items.jsonl", items), "name": "prefs",
                                             "kind": "preference"})
    assert response.status_code == 302, response.content.decode()[:2000]
    job = Job.objects.latest("id")
    import_job_run(job_id=job.pk)
    text = visible_text(client.get(f"/imports/{job.pk}/").content.decode())
    assert "Items in the file" in text and "Responses" in text and "Items created" in text
    assert "Conversations" not in text and "Turns" not in text
