"""InterFeedback JSONL/zip import: happy paths, idempotency, update, settings, and collecting every problem."""

from __future__ import annotations

import pytest

from annotate.importkit import sources
from annotate.imports.batches import batch_import
from annotate.models import Batch, ImageBlob, Task, TaskImage, WorkItem
from tests.annotate.imports.files import db_counts, jpeg, png, task, write_jsonl, write_zip
from tests.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db


def test_zip_import_creates_tasks_and_stores_each_image_once(sample_zip):
    report = batch_import(path=sample_zip, name="b1", kind="interfeedback")

    assert report.status == "imported", report.render()
    assert report.counts == {"tasks": 3, "created": 3, "updated": 0, "unchanged": 0, "images": 2,
                             "images_new": 2}
    batch = Batch.objects.get(name="b1")
    assert batch.task_count == 3 and batch.status == Batch.Status.READY
    assert batch.import_report["status"] == "imported"
    tasks = {t.external_id: t for t in Task.objects.filter(batch=batch)}
    first, second, text_only = tasks["vl-001"], tasks["vl-002"], tasks["mt-001"]
    assert first.recorded_answers == {"replay": ["Answer: C", "Answer: B"]}
    assert second.metadata == {"difficulty": "hard"}
    assert text_only.options == [] and text_only.answer_type == "number" and text_only.ground_truth == "391"
    # a.png and a-copy.png hold the same bytes: one blob, shared; b.jpg is re-encoded as PNG.
    assert ImageBlob.objects.count() == 2
    assert [ti.blob_id for ti in first.task_images.all()] == [second.task_images.first().blob_id]
    assert set(ImageBlob.objects.values_list("mime", flat=True)) == {"image/png"}
    assert all(len(t.content_hash) == 64 for t in Task.objects.all())


def test_reimport_of_the_same_file_is_unchanged(sample_zip):
    batch_import(path=sample_zip, name="b1", kind="interfeedback")
    before = db_counts()

    report = batch_import(path=sample_zip, name="b1", kind="interfeedback")

    assert report.status == "unchanged" and report.ok
    assert report.counts["unchanged"] == 3 and report.counts["created"] == 0
    assert "Unchanged" in report.summary()
    assert db_counts() == before


def test_changed_content_is_an_error_unless_update(tmp_path):
    path = write_zip(tmp_path / "v1.zip", [task("a", images=["images/x.png"]), task("b")], {"images/x.png": png()})
    batch_import(path=path, name="b", kind="interfeedback")
    changed = write_zip(tmp_path / "v2.zip", [task("a", answer="C", images=["images/x.png"]), task("b"),
                                              task("c")], {"images/x.png": png("blue")})
    before = db_counts()

    report = batch_import(path=changed, name="b", kind="interfeedback")

    assert report.status == "invalid"
    assert [str(p) for p in report.problems] == [
        "line 1, field id: task 'a' already exists in batch 'b' with different answer, images; import with update "
        "to replace it"]
    assert db_counts() == before

    report = batch_import(path=changed, name="b", kind="interfeedback", update=True)

    assert report.status == "imported", report.render()
    assert report.counts == {"tasks": 3, "created": 1, "updated": 1, "unchanged": 1, "images": 1,
                                  "images_new": 1}
    a = Task.objects.get(external_id="a")
    assert a.ground_truth == "C"
    assert TaskImage.objects.filter(task=a).count() == 1
    assert a.task_images.get().blob.sha256 != ImageBlob.objects.exclude(pk=a.task_images.get().blob_id).get().sha256
    assert Batch.objects.get(name="b").task_count == 3


def test_dry_run_reports_what_would_happen_and_writes_nothing(sample_zip):
    before = db_counts()

    report = batch_import(path=sample_zip, name="b1", kind="interfeedback", dry_run=True)

    assert report.status == "dry_run" and report.counts["created"] == 3
    assert db_counts() == before


def test_settings_set_models_and_make_work_items(sample_zip):
    models = [ModelConfigFactory(name="replay"), ModelConfigFactory(name="m-b")]

    report = batch_import(path=sample_zip, name="b1", kind="interfeedback",
                          settings={"models": "replay,m-b", "overlap": "2", "max_rounds": 3, "gold_rate": 0.1,
                                    "prompt_templates": {"receiver_retry": "{feedback}\nTry again."}})

    assert report.ok, report.render()
    batch = Batch.objects.get(name="b1")
    assert set(batch.models_to_evaluate.all()) == set(models)
    assert (batch.overlap, batch.max_rounds, batch.gold_rate) == (2, 3, 0.1)
    assert WorkItem.objects.filter(batch=batch).count() == 6 == report.counts["work_items_new"]

    again = batch_import(path=sample_zip, name="b1", kind="interfeedback", settings={"models": ["replay", "m-b"]})
    assert again.status == "unchanged" and WorkItem.objects.count() == 6


def test_settings_change_alone_applies_to_an_unchanged_batch(sample_zip):
    ModelConfigFactory(name="replay")
    batch_import(path=sample_zip, name="b1", kind="interfeedback")

    report = batch_import(path=sample_zip, name="b1", kind="interfeedback", settings={"models": ["replay"]})

    assert report.status == "unchanged" and report.counts["settings_updated"] == 1
    assert WorkItem.objects.filter(batch__name="b1").count() == 3


def test_bad_settings_are_reported_with_the_file_problems(tmp_path):
    ModelConfigFactory(name="known")
    path = write_jsonl(tmp_path / "t.jsonl", [task("a", answer="Z")])

    report = batch_import(path=path, name="b", kind="interfeedback",
                          settings={"models": "known,ghost", "overlap": 0, "gold_rate": 2, "colour": "red",
                                    "prompt_templates": {"receiver_retry": "{nope}", "other": "x"}})

    texts = [str(p) for p in report.problems]
    assert "field settings.models: unknown model(s) 'ghost'; known: known" in texts
    assert "field settings.overlap: must be a whole number from 1 to 100, got 0" in texts
    assert any(t.startswith("field settings.gold_rate") for t in texts)
    assert any(t.startswith("field settings.colour: unknown setting") for t in texts)
    assert any(t.startswith("field settings.prompt_templates.receiver_retry: bad placeholder") for t in texts)
    assert any(t.startswith("field settings.prompt_templates.other: unknown template") for t in texts)
    assert any(t.startswith("line 1, field answer:") for t in texts)
    assert not Batch.objects.exists()


def test_every_problem_is_collected_not_just_the_first(tmp_path):
    records = [task(f"t{i}", answer="Z") for i in range(1, 6)] + [task("t1")]
    path = write_jsonl(tmp_path / "t.jsonl", records)

    report = batch_import(path=path, name="b", kind="interfeedback")

    assert [p.line for p in report.problems] == [1, 2, 3, 4, 5, 6]
    assert str(report.problems[-1]) == "line 6, field id: duplicate id 't1' (first used on line 1)"


def test_problem_list_is_capped_but_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(sources.LIMITS, "max_reported_problems", 3)
    path = write_jsonl(tmp_path / "t.jsonl", [task(f"t{i}", answer="Z") for i in range(10)])

    report = batch_import(path=path, name="b", kind="interfeedback")

    assert len(report.problems) == 3 and report.problem_total == 10
    assert "... and 7 more problem(s)" in report.render()


def test_jsonl_with_bom_crlf_and_images_next_to_it(tmp_path):
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "p.png").write_bytes(png())
    body = b"\r\n".join(
        line for line in write_jsonl(tmp_path / "x.jsonl", [task("a", images=["images/p.png"]), task("b")])
        .read_bytes().split(b"\n")
    )
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + body)

    report = batch_import(path=path, name="b", kind="interfeedback")

    assert report.status == "imported", report.render()
    assert TaskImage.objects.count() == 1


def test_images_dir_option_and_zip_of_a_folder(tmp_path):
    folder = tmp_path / "pics"
    folder.mkdir()
    (folder / "p.png").write_bytes(png())
    path = write_jsonl(tmp_path / "t.jsonl", [task("a", images=["p.png"])])
    assert batch_import(path=path, name="b", kind="interfeedback", options={"images_dir": str(folder)}).ok

    zipped = write_zip(tmp_path / "folder.zip", [task("z", images=["images/q.png"])],
                       {"export/images/q.png": jpeg()}, tasks_name="export/tasks.jsonl")
    report = batch_import(path=zipped, name="c", kind="interfeedback")
    assert report.status == "imported", report.render()


def test_unknown_fields_are_warned_once(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [task("a", img_path="x"), task("b", img_path="y")])

    report = batch_import(path=path, name="b", kind="interfeedback")

    assert report.ok and report.warnings == [
        "field 'img_path' (first on line 1) is not a known field and was ignored"]


def test_remote_images_when_allowed(tmp_path, settings, monkeypatch):
    settings.ALLOW_REMOTE_IMAGES = True
    fetched = []

    def fake_fetch(url, *, max_bytes):
        fetched.append(url)
        return png("purple")

    monkeypatch.setattr("annotate.sessions.importers.taskrecords.fetch_remote_image", fake_fetch)
    path = write_jsonl(tmp_path / "t.jsonl", [task("a", images=["https://example.org/a.png"])])

    report = batch_import(path=path, name="b", kind="interfeedback")

    assert report.ok and fetched == ["https://example.org/a.png"]


def test_zip_entry_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(sources.LIMITS, "max_zip_entries", 2)
    path = write_zip(tmp_path / "t.zip", [task("a")], {"images/1.png": png(), "images/2.png": png()})

    report = batch_import(path=path, name="b", kind="interfeedback")

    assert [str(p) for p in report.problems] == ["the zip has 3 entries; at most 2 are allowed"]


def test_image_file_size_is_capped(tmp_path, monkeypatch):
    monkeypatch.setattr("annotate.sessions.importers.taskrecords.MAX_IMAGE_BYTES", 100)
    path = write_zip(tmp_path / "t.zip", [task("a", images=["images/big.png"])],
                     {"images/big.png": png(size=(200, 200), mode="RGB") + b"\0" * 200})

    report = batch_import(path=path, name="b", kind="interfeedback")

    assert "at most 100 are allowed" in str(report.problems[0])


def test_kind_mismatch_with_an_existing_batch(tmp_path):
    Batch.objects.create(name="fire-batch", kind=Batch.Kind.FIRE)
    path = write_jsonl(tmp_path / "t.jsonl", [task("a")])

    report = batch_import(path=path, name="fire-batch", kind="interfeedback")

    assert str(report.problems[0]) == "field kind: batch 'fire-batch' exists as a fire batch; cannot import " \
                                      "interfeedback into it"


def test_unknown_kind_is_an_application_error(tmp_path):
    from annotate.errors import ApplicationError

    with pytest.raises(ApplicationError, match="Unknown import kind 'xml'"):
        batch_import(path=tmp_path / "x", name="b", kind="xml")


def test_a_directory_or_missing_path_is_reported(tmp_path):
    assert "is a directory" in str(batch_import(path=tmp_path, name="b", kind="interfeedback").problems[0])
    missing = batch_import(path=tmp_path / "nope.jsonl", name="b", kind="interfeedback")
    assert "does not exist" in str(missing.problems[0])


def test_progress_is_reported_per_phase(sample_zip):
    seen = []
    batch_import(path=sample_zip, name="b1", kind="interfeedback", progress=lambda *a: seen.append(a))
    assert ("read", 3, 3) in seen and ("images", 3, 3) in seen and ("write", 3, 3) in seen


def test_zip_members_read_lazily_are_not_all_loaded(tmp_path):
    """Entries no task references are checked for safety but not read."""
    path = write_zip(tmp_path / "t.zip", [task("a")], {"images/unused.png": b"not even an image"})
    assert batch_import(path=path, name="b", kind="interfeedback").ok



def test_awkward_text_is_stored_exactly(tmp_path):
    """Tabs, backslashes, newlines and emoji survive the bulk insert (COPY escaping on PostgreSQL)."""
    question = "Tab\there, back\\slash \\N, new\nline, cr\r, ünïcode 😀"
    meta = {"note": "a\tb\\c", "nested": {"list": [1, 2.5, None, True]}}
    path = write_jsonl(tmp_path / "t.jsonl", [task("a", question=question, meta=meta,
                                                   options=["x\ty", "back\\slash"], answer="A")])

    assert batch_import(path=path, name="b", kind="interfeedback").ok

    stored = Task.objects.get()
    assert (stored.question, stored.metadata, stored.options) == (question, meta, ["x\ty", "back\\slash"])


def test_nul_characters_are_refused(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [task("a", question="bad\u0000byte"), task("b", meta={"k": "\u0000"})])

    report = batch_import(path=path, name="b", kind="interfeedback")

    assert [str(p) for p in report.problems] == [
        "line 1, field question: contains a NUL character (\\u0000), which the database cannot store",
        "line 2, field meta: contains a NUL character (\\u0000), which the database cannot store"]


def test_settings_later_with_the_service(sample_zip):
    from annotate.errors import ApplicationError
    from annotate.imports.batches import batch_settings_apply

    batch_import(path=sample_zip, name="b1", kind="interfeedback")
    batch = Batch.objects.get(name="b1")
    ModelConfigFactory(name="late")

    batch = batch_settings_apply(batch=batch, settings={"models": ["late"], "max_rounds": 2})

    assert batch.max_rounds == 2 and WorkItem.objects.filter(batch=batch).count() == 3
    with pytest.raises(ApplicationError, match="field settings.models: unknown model"):
        batch_settings_apply(batch=batch, settings={"models": ["nope"]})


def test_a_concurrent_import_conflict_writes_nothing(sample_zip, monkeypatch):
    from django.db import IntegrityError

    from annotate.imports.registry import IMPORTERS

    def collide(*args, **kwargs):
        raise IntegrityError("duplicate key value violates unique constraint")

    monkeypatch.setattr(IMPORTERS["interfeedback"], "write", collide)
    before = db_counts()

    report = batch_import(path=sample_zip, name="b1", kind="interfeedback")

    assert report.status == "invalid"
    assert str(report.problems[0]).startswith("another import changed batch 'b1' at the same time")
    assert db_counts() == before


def test_recorded_answers_must_name_a_model_of_the_batch(sample_zip):
    ModelConfigFactory(name="m-a")
    for dry_run in (True, False):
        report = batch_import(path=sample_zip, name="b-rec", kind="interfeedback", dry_run=dry_run,
                              settings={"models": ["m-a"]})
        assert not report.ok
        assert [str(p) for p in report.problems] == [
            "line 1, field recorded_answers.replay: names no model of the batch; the models given for this batch: m-a"]
    assert not Batch.objects.filter(name="b-rec").exists()


def test_recorded_answers_without_models_is_a_warning_naming_them(sample_zip):
    report = batch_import(path=sample_zip, name="b-warn", kind="interfeedback")
    assert report.ok and any("recorded_answers name models that do not exist yet: replay" in w
                             for w in report.warnings)
