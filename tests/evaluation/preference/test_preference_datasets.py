"""The preference exports as a Hugging Face dataset: Parquet with the images inside, the zip download whose image
paths resolve, the seeded split by item, the dataset card, in the downloads (API, export_tables) and the study
bundle. Loaded with `datasets` as a user would (a test dependency; nothing downloaded)."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command

from annotate.server.version import VERSION
from evaluation.exports import registry as exports
from evaluation.exports.bundle import bundle_write
from evaluation.exports.filters import ReportFilters
from evaluation.preference.reports import preference_report
from tests.evaluation.preference.study import RECORDS, import_study, rate, raters

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def hf(monkeypatch, tmp_path):
    """`datasets`, offline, its cache in the test's folder."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    import datasets  # slow to import: only where used

    return datasets


def _download(api_client, batch, name: str, fmt: str, query: str = "") -> bytes:
    response = api_client.get(f"/api/batches/{batch.id}/tables/{name}.{fmt}{query}")
    assert response.status_code == 200, response.content[:300]
    return b"".join(response.streaming_content) if response.streaming else response.content


def _shown_size(batch, item: str) -> tuple[int, int]:
    image = batch.conversations.get(external_id=item).image
    return image.width, image.height


def test_parquet_exports_load_with_datasets_as_pil_images(study, api_client, researcher, hf, tmp_path):
    api_client.force_authenticate(researcher)
    for name in ("preference-dpo", "preference-responses"):
        (tmp_path / f"{name}.parquet").write_bytes(_download(api_client, study, name, "parquet"))
    pairs = hf.load_dataset("parquet", data_files=str(tmp_path / "preference-dpo.parquet"), split="train")
    assert pairs.num_rows == 20  # as many as the JSON lines
    assert pairs.features["images"] == hf.List(hf.Image())
    first = pairs[0]
    assert first["item"] == "q1" and first["chosen"][0]["content"][0]["text"] == "Three bars."
    picture = first["images"][0]
    assert picture.__class__.__module__.startswith("PIL.") and picture.size == _shown_size(study, "q1")
    q2 = next(r for r in pairs if r["item"] == "q2")
    assert q2["images"][0].size == _shown_size(study, "q2")
    q3 = next(r for r in pairs if r["item"] == "q3")
    assert q3["images"] == [] and q3["prompt"][0]["content"] == [{"type": "text", "text": "Is 7 prime?"}]
    # The same records as the JSON lines, the images aside.
    lines = [json.loads(line) for line in exports.build_export(study, "preference-dpo", "jsonl").read().splitlines()]
    assert [(r["rater"], r["chosen_candidate"], r["votes_chosen"]) for r in pairs] == \
        [(r["rater"], r["chosen_candidate"], r["votes_chosen"]) for r in lines]
    assert first["chosen_scores"] == lines[0]["chosen_scores"]

    responses = hf.load_dataset("parquet", data_files=str(tmp_path / "preference-responses.parquet"), split="train")
    assert responses.num_rows == 9 and responses.features["image"] == hf.Image()
    assert responses[0]["image"].size == _shown_size(study, "q1") and responses[6]["image"] is None
    assert responses[0]["ratings"][0]["rater"] == "ann-r1"


def test_zip_download_resolves_every_image_path_and_loads_as_a_folder(study, api_client, researcher, hf, tmp_path):
    """The standalone download of the JSON lines: a zip holding the file, the images it names and its card."""
    api_client.force_authenticate(researcher)
    response = api_client.get(f"/api/batches/{study.id}/tables/preference-dpo.zip")
    assert response["Content-Type"] == "application/zip"
    assert 'filename="mm-rlhf-pilot-preference-dpo.zip"' in response["Content-Disposition"]
    folder = tmp_path / "download"
    zipfile.ZipFile(io.BytesIO(response.content)).extractall(folder)
    names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert names[:1] == ["README.md"] and "preference_dpo.jsonl" in names and "preference_dpo.parquet" in names
    jsonl = (folder / "preference_dpo.jsonl").read_bytes()
    assert jsonl == exports.build_export(study, "preference-dpo", "jsonl").read()
    paths = {path for line in jsonl.decode().splitlines() for path in json.loads(line)["images"]}
    assert len(paths) == 2 and all((folder / path).is_file() for path in paths)
    assert {n for n in names if n.startswith("images/")} == paths
    # The responses' zip too, its `image` paths.
    responses = zipfile.ZipFile(io.BytesIO(_download(api_client, study, "preference-responses", "zip")))
    lines = [json.loads(line) for line in responses.read("preference_responses.jsonl").decode().splitlines()]
    assert {r["image"] for r in lines if r["image"]} <= set(responses.namelist())
    # The folder loads by its card: one split, PIL images.
    data = hf.load_dataset(str(folder))
    assert list(data) == ["train"] and data["train"].num_rows == 20
    assert data["train"][0]["images"][0].size == _shown_size(study, "q1")


def test_seeded_split_by_item_is_recorded_in_the_files(study, api_client, researcher, hf, tmp_path):
    api_client.force_authenticate(researcher)
    query = "?test_fraction=0.34&split_seed=3"
    folder = tmp_path / "split"
    zipfile.ZipFile(io.BytesIO(_download(api_client, study, "preference-dpo", "zip", query))).extractall(folder)
    data = hf.load_dataset(str(folder))
    assert sorted(data) == ["test", "train"]
    train = {r["item"] for r in data["train"]}
    test = {r["item"] for r in data["test"]}
    assert len(test) == 1 and train | test == {"q1", "q2", "q3"} and not train & test  # no item in both
    assert {r["dataset_split"] for r in data["test"]} == {"test"}
    assert data["train"].num_rows + data["test"].num_rows == 20
    # The JSON lines and the single Parquet file name each record's split the same way; the same seed, the same.
    lines = [json.loads(line) for line in _download(api_client, study, "preference-dpo", "jsonl", query).splitlines()]
    assert {r["item"] for r in lines if r["dataset_split"] == "test"} == test
    (tmp_path / "all.parquet").write_bytes(_download(api_client, study, "preference-dpo", "parquet", query))
    whole = hf.load_dataset("parquet", data_files=str(tmp_path / "all.parquet"), split="train")
    assert {r["item"] for r in whole if r["dataset_split"] == "test"} == test
    csv_text = _download(api_client, study, "preference-responses", "csv", query).decode()
    assert csv_text.splitlines()[0].endswith(",ranking,dataset_split")
    # The export command takes the same split.
    out = tmp_path / "pairs.jsonl"
    call_command("export_tables", batch=study.name, table="preference-dpo", fmt="jsonl", out=str(out),
                 test_fraction="0.34", split_seed="3")
    assert out.read_bytes() == exports.build_export(
        study, "preference-dpo", "jsonl", ReportFilters(test_fraction=0.34, split_seed=3)).read()
    # Without a split: no split column.
    assert "dataset_split" not in exports.build_export(study, "preference-dpo", "jsonl").read().decode()


@pytest.mark.parametrize("query, message", [
    ("?test_fraction=1", "test_fraction: 1.0 is not between 0 and 1"),
    ("?test_fraction=half", "test_fraction: Enter a number"),
    ("?split_seed=4", "split_seed: A seed needs test_fraction"),
])
def test_a_bad_split_is_refused_naming_it(study, api_client, researcher, query, message):
    api_client.force_authenticate(researcher)
    response = api_client.get(f"/api/batches/{study.id}/tables/preference-dpo.parquet{query}")
    assert response.status_code == 400 and message in response.json()["detail"]


def test_dataset_card_has_features_splits_agreement_and_version(study, api_client, researcher):
    api_client.force_authenticate(researcher)
    archive = zipfile.ZipFile(io.BytesIO(_download(api_client, study, "preference-dpo", "zip",
                                                   "?test_fraction=0.34&split_seed=3")))
    card = archive.read("README.md").decode()
    front, body = card.split("\n---\n", 1)
    assert front.startswith("---\n")
    assert "  - split: train\n    path: preference_dpo-train.parquet\n" in front
    assert "  - split: test\n    path: preference_dpo-test.parquet\n" in front
    assert "  - name: images\n    list: image\n" in front and "  - name: chosen_scores\n    struct:\n" in front
    counts = [int(n) for n in re.findall(r"num_examples: (\d+)", front)]
    assert sum(counts) == 20 and len(counts) == 2
    assert re.search(r"download_size: \d+", front) and "- n<1K" in front
    assert "license: other  # fill in" in front
    summary = preference_report(study).agreement.rows[0]
    assert f"Krippendorff's alpha (ordinal) {summary[4]}" in body
    assert f"mean pairwise Cohen's kappa (quadratic weights) {summary[5]}" in body
    assert f"Feedback Lab {VERSION}" in body
    assert "one record per rater and **strict** preference" in body and "Ties prefer nothing" in body
    assert "`votes_chosen`" in body and "seed 3" in body


def test_study_bundle_holds_parquet_and_a_card_that_loads(study, hf, tmp_path):
    buffer = io.BytesIO()
    bundle_write(study, buffer)
    folder = tmp_path / "bundle"
    zipfile.ZipFile(buffer).extractall(folder)
    data = folder / "data"
    assert {"README.md", "preference_dpo.parquet", "preference_responses.parquet"} <= {p.name for p in data.iterdir()}
    pairs = hf.load_dataset(str(data), "pairs", split="train")
    assert pairs.num_rows == 20 and pairs[0]["images"][0].size == _shown_size(study, "q1")
    responses = hf.load_dataset(str(data), "responses", split="train")
    assert responses.num_rows == 9 and responses[0]["image"].size == _shown_size(study, "q1")
    readme = (folder / "README.md").read_text()
    assert "| data/README.md | The dataset card" in readme


def test_a_study_without_images_has_no_images_column(tmp_path, hf):
    text_only = [{key: value for key, value in record.items() if key != "image"} for record in RECORDS]
    batch = import_study(tmp_path, records=text_only, name="text-only")
    rate(batch, raters())
    first = json.loads(exports.build_export(batch, "preference-dpo", "jsonl").read().splitlines()[0])
    assert "images" not in first and first["prompt"][0]["content"] == [
        {"type": "text", "text": "How many bars are there?"}]
    (tmp_path / "pairs.parquet").write_bytes(exports.build_export(batch, "preference-dpo", "parquet").read())
    pairs = hf.load_dataset("parquet", data_files=str(tmp_path / "pairs.parquet"), split="train")
    assert "images" not in pairs.column_names and pairs.num_rows == 20
    card = zipfile.ZipFile(io.BytesIO(exports.build_export(batch, "preference-dpo", "zip").read())).read("README.md")
    assert b"- text-generation" in card and b"name: images" not in card


def test_train_smoke_script_prints_finite_losses_for_both_trainers(tmp_path):
    """benchmarks/train_smoke.py as a user runs it (needs the `train` extra): a study made and downloaded, then TRL."""
    pytest.importorskip("trl")
    import subprocess
    import sys

    env = {key: value for key, value in __import__("os").environ.items()
           if key not in ("DATABASE_URL", "REDIS_URL", "FEEDBACK_LAB_VAR_DIR", "DJANGO_SETTINGS_MODULE")}
    run = subprocess.run([sys.executable, "benchmarks/train_smoke.py", "--keep", str(tmp_path / "smoke")],
                         capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    for trainer in ("text RewardTrainer", "text DPOTrainer", "vision DPOTrainer"):
        line = next(line for line in run.stdout.splitlines() if line.startswith(f"{trainer}: losses per step"))
        assert line.endswith("(finite)") and re.search(r"\[[-\d.]+, [-\d.]+, [-\d.]+\]", line)
    assert "malformed" not in run.stderr  # the dataset card's YAML is read whole
