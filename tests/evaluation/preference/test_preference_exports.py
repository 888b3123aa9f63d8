"""The raw judgments of a preference batch: per response (JSON lines, CSV) and as chosen/rejected pairs loaded by
Hugging Face ``datasets``, through export_tables, the API and the study bundle; refusals that name the right
export. Values hand-listed from the study's plan (tests/evaluation/preference/study.py)."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Batch
from evaluation.exports import registry as exports
from evaluation.exports.bundle import bundle_write
from evaluation.preference.reports import preference_export
from tests.evaluation.preference.study import import_study
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _jsonl(batch: Batch, name: str) -> list[dict]:
    return [json.loads(line) for line in exports.build_export(batch, name, "jsonl").read().decode().splitlines()]


def test_responses_export_has_every_response_and_every_raters_judgment(study):
    records = _jsonl(study, "preference-responses")
    assert [(r["item"], r["candidate"], r["model"]) for r in records] == [
        ("q1", 1, "alpha"), ("q1", 2, "beta"), ("q1", 3, "gamma"), ("q2", 1, "beta"), ("q2", 2, "gamma"),
        ("q2", 3, "alpha"), ("q3", 1, "gamma"), ("q3", 2, "alpha"), ("q3", 3, "beta")]
    first = records[0]
    assert (first["question"], first["response"], first["image_name"]) == (
        "How many bars are there?", "Three bars.", "bars_01.png")
    assert first["image"].startswith("images/") and first["image"].endswith(".png")
    assert first["ratings"] == [
        {"rater": "ann-r1", "helpfulness": 5, "faithfulness": 5, "ethics": 5, "reason": "Counts right.", "place": 1,
         "ranking": "1>2=3"},
        {"rater": "ann-r2", "helpfulness": 5, "faithfulness": 4, "ethics": 5, "reason": "Right.", "place": 1,
         "ranking": "1>2>3"},
        {"rater": "ann-r3", "helpfulness": 4, "faithfulness": 4, "ethics": 5, "reason": "Good.", "place": 2,
         "ranking": "2>1>3"},
    ]
    # q1's third response: tied second by r1 (1>2=3, the tie shares place 2), third by the others.
    assert [(r["rater"], r["place"]) for r in records[2]["ratings"]] == [("ann-r1", 2), ("ann-r2", 3), ("ann-r3", 3)]
    # q3: r2 skipped it, so two raters; no image.
    q3 = records[6]
    assert q3["image"] is None and [r["rater"] for r in q3["ratings"]] == ["ann-r1", "ann-r3"]


def test_responses_csv_has_one_row_per_response_and_rater(study):
    rows = list(csv.DictReader(io.StringIO(exports.build_export(study, "preference-responses", "csv").read().decode())))
    assert len(rows) == 3 * 3 + 3 * 3 + 3 * 2  # q1 and q2 rated by three raters, q3 by two
    assert rows[0] == {"item": "q1", "question": "How many bars are there?", "image": rows[0]["image"],
                       "source": "mm-rlhf", "split": "dev", "candidate": "1", "model": "alpha",
                       "response": "Three bars.", "rater": "ann-r1", "helpfulness": "5", "faithfulness": "5",
                       "ethics": "5", "reason": "Counts right.", "place": "1", "ranking": "1>2=3"}
    assert rows[-1]["image"] == ""  # q3 has no image: empty, not "-"


# q1, by hand: r1 1>2=3 gives (1 over 2), (1 over 3), 2=3 left out; r2 1>2>3 gives (1/2), (1/3), (2/3);
# r3 2>1>3 gives (2/1), (1/3), (2/3). Votes on 1 vs 2: r1, r2 for 1, r3 for 2; on 1 vs 3: all for 1; on 2 vs 3:
# r2, r3 for 2, r1 tied.
Q1_PAIRS = [
    ("ann-r1", 1, 2, 2, 1, 0), ("ann-r2", 1, 2, 2, 1, 0), ("ann-r3", 2, 1, 1, 2, 0),
    ("ann-r1", 1, 3, 3, 0, 0), ("ann-r2", 1, 3, 3, 0, 0), ("ann-r3", 1, 3, 3, 0, 0),
    ("ann-r2", 2, 3, 2, 0, 1), ("ann-r3", 2, 3, 2, 0, 1),
]


def test_dpo_export_is_one_line_per_raters_strict_preference(study):
    records = _jsonl(study, "preference-dpo")
    q1 = [r for r in records if r["item"] == "q1"]
    assert [(r["rater"], r["chosen_candidate"], r["rejected_candidate"], r["votes_chosen"], r["votes_rejected"],
             r["votes_tied"]) for r in q1] == Q1_PAIRS
    first = q1[0]
    assert first["prompt"] == [{"role": "user", "content": [
        {"type": "image"}, {"type": "text", "text": "How many bars are there?"}]}]
    assert first["chosen"] == [{"role": "assistant", "content": [{"type": "text", "text": "Three bars."}]}]
    assert first["rejected"] == [{"role": "assistant", "content": [{"type": "text", "text": "Four bars."}]}]
    assert (first["chosen_model"], first["rejected_model"], first["ranking"]) == ("alpha", "beta", "1>2=3")
    assert first["chosen_scores"] == {"helpfulness": 5, "faithfulness": 5, "ethics": 5}
    assert (first["chosen_reason"], first["rejected_reason"]) == ("Counts right.", "Off by one.")
    assert len(first["images"]) == 1 and first["images"][0].startswith("images/")
    # A text-only item: no image part, no image.
    q3 = next(r for r in records if r["item"] == "q3")
    assert q3["images"] == [] and q3["prompt"][0]["content"] == [{"type": "text", "text": "Is 7 prime?"}]
    # Every pair: q1 8, q2 r1 3>1>2 (3) + r2 1=3>2 (2) + r3 3>1=2 (2) = 7, q3 r1 (3) + r3 2=3>1 (2) = 5.
    assert len(records) == 8 + 7 + 5
    # Nothing changes between two exports: the file is the same bytes.
    assert exports.build_export(study, "preference-dpo", "jsonl").read() == \
        exports.build_export(study, "preference-dpo", "jsonl").read()


def test_hugging_face_datasets_loads_the_pairs_and_their_images(study, tmp_path, monkeypatch):
    """The bundle's pairs load with `datasets.load_dataset("json", ...)` as TRL's conversational preference columns,
    and the image paths open as images once cast (nothing downloaded)."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets  # a test dependency (pyproject's test extras); imported here, it is slow to load
    buffer = io.BytesIO()
    bundle_write(study, buffer)
    folder = tmp_path / "bundle"
    zipfile.ZipFile(buffer).extractall(folder)
    data = folder / "data"
    pairs = datasets.load_dataset("json", data_files=str(data / "preference_dpo.jsonl"), split="train",
                                  cache_dir=str(tmp_path / "hf-cache"))
    assert {"prompt", "chosen", "rejected", "images"} <= set(pairs.column_names)
    assert pairs.num_rows == 20
    row = pairs[0]
    assert row["chosen"][0]["role"] == "assistant" and row["chosen"][0]["content"][0]["text"] == "Three bars."
    assert [part["type"] for part in row["prompt"][0]["content"]] == ["image", "text"]
    with_paths = pairs.map(lambda r: {"images": [str(data / path) for path in r["images"]]})
    decoded = with_paths.cast_column("images", datasets.Sequence(datasets.Image()))
    shown = study.conversations.get(external_id="q1").image
    assert decoded[0]["images"][0].size == (shown.width, shown.height)  # the image the item showed
    responses = datasets.load_dataset("json", data_files=str(data / "preference_responses.jsonl"), split="train",
                                      cache_dir=str(tmp_path / "hf-cache"))
    assert responses.num_rows == 9 and responses[0]["ratings"][0]["rater"] == "ann-r1"


def test_export_tables_command_writes_the_raw_exports_and_refuses_sessions(study, tmp_path):
    out = tmp_path / "pairs.jsonl"
    call_command("export_tables", batch=study.name, table="preference-dpo", fmt="jsonl", out=str(out))
    assert out.read_bytes() == exports.build_export(study, "preference-dpo", "jsonl").read()
    for table in ("sessions", "accuracy"):
        fmt = "jsonl" if table == "sessions" else "csv"
        with pytest.raises(CommandError, match="is a Preference rating .* batch: it has no InterFeedback sessions.*"
                                               "preference-responses .jsonl, csv. and preference-dpo"):
            call_command("export_tables", batch=study.name, table=table, fmt=fmt)
    with pytest.raises(CommandError, match="export_tables --batch mm-rlhf-pilot --table preference-responses"):
        call_command("export_fire", batch=study.name, what="ratings", format="csv")
    with pytest.raises(CommandError, match="export_tables --batch mm-rlhf-pilot --table preference-responses"):
        call_command("export_batch", batch=study.name, out=str(tmp_path / "x.zip"))


def test_registered_tables_are_byte_for_byte_the_reports_downloads(study):
    for name in ("pairs", "agreement", "kappa", "scores"):
        for fmt in ("csv", "md", "tex", "json"):
            assert exports.build_export(study, f"preference-{name}", fmt).read() == \
                preference_export(study, name, fmt).content


def test_study_bundle_holds_the_four_tables_both_raw_exports_and_the_images(study):
    buffer = io.BytesIO()
    summary = bundle_write(study, buffer)
    archive = zipfile.ZipFile(buffer)
    names = set(archive.namelist())
    for stem in ("preference_pairs", "preference_agreement", "preference_kappa", "preference_scores"):
        assert {f"tables/{stem}.{fmt}" for fmt in ("csv", "md", "tex", "json")} <= names
    assert {"data/preference_responses.jsonl", "data/preference_responses.csv", "data/preference_dpo.jsonl"} <= names
    images = sorted(n for n in names if n.startswith("data/images/"))
    assert len(images) == 2  # q1's and q2's; q3 has none
    pairs_file = archive.read("data/preference_dpo.jsonl")
    assert pairs_file == exports.build_export(study, "preference-dpo", "jsonl").read()
    referenced = {f"data/{path}" for line in pairs_file.decode().splitlines() for path in json.loads(line)["images"]}
    assert referenced == set(images)
    assert archive.read("tables/preference_pairs.csv") == preference_export(study, "pairs", "csv").content
    readme = archive.read("README.md").decode()
    assert "Preference rating batch (MM-RLHF style): 3 items, 8 final rankings by 3 raters" in readme
    assert "completed sessions" not in readme and "tables/preference_*" not in readme
    assert "| data/images/ (2 files) |" in readme
    assert summary.skipped == {}


def test_bundle_of_a_batch_without_judgments_says_why(tmp_path):
    batch = import_study(tmp_path, name="not-rated-yet")
    buffer = io.BytesIO()
    summary = bundle_write(batch, buffer)
    assert summary.skipped["tables/preference_*"] == "Batch 'not-rated-yet' has no final rankings to report yet."
    assert summary.skipped["data/preference_*"] == "Batch 'not-rated-yet' has no final judgments to export yet."


# --- API ------------------------------------------------------------------------------------------------------


def test_api_downloads_the_raw_exports(api_client, study, researcher, annotator, django_assert_max_num_queries):
    api_client.force_authenticate(researcher)
    with django_assert_max_num_queries(12):
        response = api_client.get(f"/api/batches/{study.id}/tables/preference-dpo.jsonl")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/jsonl")
    assert 'filename="mm-rlhf-pilot-preference-dpo.jsonl"' in response["Content-Disposition"]
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert body == exports.build_export(study, "preference-dpo", "jsonl").read()
    csv_response = api_client.get(f"/api/batches/{study.id}/tables/preference-responses.csv")
    assert csv_response.status_code == 200 and csv_response.content.startswith(b"item,question,image,")
    report = api_client.get(f"/api/batches/{study.id}/preferences/").json()
    assert report["exports"]["preference-dpo"] == [f"/api/batches/{study.id}/tables/preference-dpo.{fmt}"
                                                   for fmt in ("zip", "parquet", "jsonl")]
    # Bad input: a format the export has not, an InterFeedback export, an unknown export.
    bad = api_client.get(f"/api/batches/{study.id}/tables/preference-dpo.csv")
    assert bad.status_code == 400 and "expected one of zip, parquet, jsonl" in bad.json()["detail"]
    sessions = api_client.get(f"/api/batches/{study.id}/tables/accuracy.csv")
    assert sessions.status_code == 400 and "it has no InterFeedback sessions" in sessions.json()["detail"]
    assert api_client.get(f"/api/batches/{study.id}/tables/preference-votes.jsonl").status_code == 404
    # People: an annotator 403, a researcher who is not a member 404.
    api_client.force_authenticate(annotator)
    assert api_client.get(f"/api/batches/{study.id}/tables/preference-dpo.jsonl").status_code == 403
    api_client.force_authenticate(UserFactory(username="stranger", role="researcher"))
    assert api_client.get(f"/api/batches/{study.id}/tables/preference-dpo.jsonl").status_code == 404


def test_raw_exports_of_another_kind_of_batch_are_refused(api_client, researcher):
    fire = Batch.objects.create(name="a-fire-batch", kind=Batch.Kind.FIRE)
    fire.members.add(researcher)
    api_client.force_authenticate(researcher)
    response = api_client.get(f"/api/batches/{fire.id}/tables/preference-dpo.jsonl")
    assert response.status_code == 400 and "preference reports are for" in response.json()["detail"]


def test_the_images_dir_holds_what_the_import_stored(study):
    """The image paths name the stored file's SHA-256: the same file the item showed."""
    records = _jsonl(study, "preference-responses")
    conversation = study.conversations.get(external_id="q1")
    assert Path(records[0]["image"]).name == f"{conversation.image.sha256}.png"
