"""Publishing a batch: tables and figures in the batch's category order with the models' display names, Table 4's
paper layout, and the study bundle (one zip) from the page, the API and the command, for members and admins only.

Counts (hand-computed cells): GPT-4o Visual Logic 17/80 = 21.25 -> 21.3, Math (Text) 1/16 = 6.25 -> 6.3, Coding
(Text) 1/17 = 5.88 -> 5.9, Average 19/113 = 16.8; Claude Visual Logic 10/40 = 25.0, Math 5/40 = 12.5, Average 18.8.
"""

from __future__ import annotations

import csv
import io
import json
import time
import zipfile

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotate.models import Job, ModelConfig, User
from evaluation.exports import bundle
from evaluation.exports import jobs as export_jobs
from evaluation.exports import registry as exports
from evaluation.fire.registration import FIRE_RATING_TABLES
from evaluation.interfeedback import selectors, services
from evaluation.interfeedback.plots import (
    corrected_round_by_category_figure,
    corrected_round_by_model_figure,
)
from tests.evaluation.builders import sessions_from_counts
from tests.evaluation.fire.test_fire_reports import rate_all
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db

ORDER = ["Visual Logic", "Math (Text)", "Coding (Text)"]  # not alphabetical: the batch's order must win
KEY = "sk-proj-Zx81hQ0pLmNvB7cD2eF3gH4iJ5kL"  # a pasted key, stored behind the validation's back

COUNTS = {
    ("gpt-4o", "Visual Logic"): (80, (17, 9, 5, 3)),
    ("gpt-4o", "Math (Text)"): (16, (1, 2, 0, 1)),
    ("gpt-4o", "Coding (Text)"): (17, (1, 1, 0, 0)),
    ("claude", "Visual Logic"): (40, (10, 6, 3, 1)),
    ("claude", "Math (Text)"): (40, (5, 5, 2, 2)),
}
TABLE_3 = [
    ["Model", *ORDER, "Average"],
    ["Claude-3.5-Sonnet", "25.0", "12.5", "-", "18.8"],
    ["GPT-4o", "21.3", "6.3", "5.9", "16.8"],
]
# CSV: undefined is empty, and beside each value the sessions behind it, k right in round 0 of n (by hand from
# COUNTS: Claude 10/40, 5/40, none, pooled 15/80; GPT-4o 17/80, 1/16, 1/17, pooled 19/113)
TABLE_3_COUNTS = [["10", "40", "5", "40", "0", "0", "15", "80"], ["17", "80", "1", "16", "1", "17", "19", "113"]]


def with_counts(header: list[str], labels: int = 1) -> list[str]:
    """A header with "(k)" and "(n)" beside each value column."""
    return [*header[:labels], *(name for column in header[labels:]
                                for name in (column, f"{column} (k)", f"{column} (n)"))]


TABLE_3_CSV = [with_counts(TABLE_3[0])] + [
    [row[0], *(text for value, k, n in zip(row[1:], counts[0::2], counts[1::2], strict=True)
               for text in ("" if value == "-" else value, k, n))]
    for row, counts in zip(TABLE_3[1:], TABLE_3_COUNTS, strict=True)]


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def batch(researcher, annotator, media):
    models = {
        "gpt-4o": ModelConfigFactory(name="gpt-4o", display_name="GPT-4o", backend=ModelConfig.Backend.OPENAI,
                                     backend_settings={"base_url": "http://vllm:8000/v1", "model": "gpt-4o",
                                                       "api_key_env": "OPENAI_API_KEY", "api_key": KEY}),
        "claude": ModelConfigFactory(name="claude", display_name="Claude-3.5-Sonnet",
                                     backend=ModelConfig.Backend.REPLAY, backend_settings={}),
    }
    batch = make_batch(models=list(models.values()), tasks=0, members=[researcher])
    batch.name, batch.category_order = "Human study", ORDER
    batch.instructions = "# Be kind\nNever state the answer."
    batch.prompt_templates = {"receiver_retry": "{feedback}\nTry again."}
    batch.save()
    for (model, category), (n, corrected) in COUNTS.items():
        sessions_from_counts(batch, models[model], category, corrected, n, annotators=(annotator,),
                             with_rounds=(model, category) == ("claude", "Math (Text)"))
    services.outcome_recompute(batch_id=batch.id)
    return batch


def _export(batch, name, fmt) -> str:
    return exports.build_export(batch, name, fmt).read().decode()


def _markdown_rows(text: str) -> list[list[str]]:
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for i, row in enumerate(rows) if i != 1]


# --- tables and figures ---------------------------------------------------------------------------------------

def test_table_3_follows_the_category_order_and_names_models_by_display_name(batch):
    assert list(csv.reader(io.StringIO(_export(batch, "accuracy", "csv")))) == TABLE_3_CSV
    assert _markdown_rows(_export(batch, "accuracy", "md")) == TABLE_3
    assert json.loads(_export(batch, "accuracy", "json"))["columns"] == TABLE_3_CSV[0]


def test_table_4_names_the_model_once_per_group_in_md_and_tex_and_on_every_row_in_csv_and_json(batch):
    header = ["Model", "# Round", *ORDER, "Average"]
    # GPT-4o: wrong in round 0: VL 63, Math 15, Coding 16, pooled 94 -> round 1: 9/63 = 14.3, 2/15 = 13.3,
    # 1/16 = 6.3, 12/94 = 12.8
    markdown = _markdown_rows(_export(batch, "correction", "md"))
    assert markdown[0] == header
    assert [row[:2] for row in markdown[1:]] == [["Claude-3.5-Sonnet", "1"], ["", "2"], ["", "3"],
                                                 ["GPT-4o", "1"], ["", "2"], ["", "3"]]
    assert markdown[4] == ["GPT-4o", "1", "14.3", "13.3", "6.3", "12.8"]
    tex = _export(batch, "correction", "tex")
    assert r"Model & \# Round & Visual Logic & Math (Text) & Coding (Text) & Average \\" in tex
    assert "\\midrule\nGPT-4o & 1 & 14.3 & 13.3 & 6.3 & 12.8 \\\\\n & 2 & " in tex
    rows = list(csv.reader(io.StringIO(_export(batch, "correction", "csv"))))
    assert rows[0] == with_counts(header, labels=2)
    assert [row[:2] for row in rows[4:]] == [["GPT-4o", "1"], ["GPT-4o", "2"], ["GPT-4o", "3"]]
    assert rows[4][2:5] == ["14.3", "9", "63"]  # 9 of the 63 wrong in round 0 corrected in round 1
    document = json.loads(_export(batch, "correction", "json"))
    assert [(row["Model"], row["# Round"]) for row in document["rows"][:2]] == [("Claude-3.5-Sonnet", 1),
                                                                                ("Claude-3.5-Sonnet", 2)]


def test_the_report_page_shows_the_same_layout(client, researcher, batch):
    client.force_login(researcher)
    page = client.get(f"/research/batches/{batch.id}/").content.decode()
    table = page[page.index('id="accuracy-table"'):]
    assert table.index("Visual Logic") < table.index("Math (Text)") < table.index("Coding (Text)")
    assert table.index("Claude-3.5-Sonnet") < table.index("GPT-4o")


def test_figures_use_display_names_and_the_category_order(batch):
    counts = selectors.outcome_counts(batch)
    layout = selectors.layout(batch, counts)
    legend = corrected_round_by_model_figure(counts, **layout).axes[0].get_legend()
    assert [text.get_text() for text in legend.get_texts()] == ["Claude-3.5-Sonnet (n=80)", "GPT-4o (n=113)"]
    panels = corrected_round_by_category_figure(counts, **layout).axes
    assert [axes.get_title().split(" (n=")[0] for axes in panels] == ORDER


def test_simulated_models_are_labelled_and_unordered_categories_follow_alphabetically(batch):
    ModelConfig.objects.filter(name="claude").update(display_name="", backend=ModelConfig.Backend.SIMULATED)
    batch.category_order = ["Coding (Text)"]
    rows = list(csv.reader(io.StringIO(_export(batch, "accuracy", "csv"))))
    assert rows[0] == with_counts(["Model", "Coding (Text)", "Math (Text)", "Visual Logic", "Average"])
    assert rows[1][0] == "claude (simulated)"


# --- the study bundle -----------------------------------------------------------------------------------------

def _bundle(batch) -> zipfile.ZipFile:
    buffer = io.BytesIO()
    bundle.bundle_write(batch, buffer)
    return zipfile.ZipFile(io.BytesIO(buffer.getvalue()))


def _check_bundle(archive: zipfile.ZipFile) -> None:
    names = set(archive.namelist())
    expected = {"README.md", "instructions.md", "settings/prompts.json", "settings/models.json",
                "data/sessions.jsonl", "data/sessions.fire.jsonl"}
    expected |= {f"tables/{stem}.{fmt}" for stem in ("table3_accuracy", "table4_correction", "costs")
                 for fmt in ("csv", "md", "tex", "json")}
    expected |= {f"figures/{stem}.{fmt}" for stem in ("fig4_corrected_round_by_model",
                                                      "fig5_corrected_round_by_category") for fmt in ("png", "svg")}
    assert names == expected
    readme = archive.read("README.md").decode()
    assert all(f"| {name} |" in readme for name in names)
    assert "Category order: Visual Logic, Math (Text), Coding (Text)." in readme
    assert "tables/bench_tables_1_2.*: Batch 'Human study' has no" in readme  # what is missing, and why
    table_3 = list(csv.reader(io.StringIO(archive.read("tables/table3_accuracy.csv").decode())))
    assert table_3 == TABLE_3_CSV
    assert _markdown_rows(archive.read("tables/table4_correction.md").decode())[4][:2] == ["GPT-4o", "1"]
    assert archive.read("figures/fig4_corrected_round_by_model.png").startswith(b"\x89PNG")
    assert b"<svg" in archive.read("figures/fig5_corrected_round_by_category.svg")
    assert len(archive.read("data/sessions.jsonl").splitlines()) == sum(n for n, _ in COUNTS.values())
    assert archive.read("instructions.md").decode() == "# Be kind\nNever state the answer.\n"
    prompts = json.loads(archive.read("settings/prompts.json"))
    assert prompts["templates"]["receiver_retry"] == "{feedback}\nTry again."
    assert prompts["changed_from_default"] == ["receiver_retry"]
    models = json.loads(archive.read("settings/models.json"))
    assert models["batch"]["category_order"] == ORDER
    gpt = next(m for m in models["models"] if m["name"] == "gpt-4o")
    assert gpt["display_name"] == "GPT-4o"
    assert gpt["backend_settings"]["api_key_env"] == "OPENAI_API_KEY"  # the variable's name stays
    assert gpt["backend_settings"]["api_key"] == "<removed: secret>"
    for name in names:  # no secret anywhere in the bundle
        assert KEY.encode() not in archive.read(name), name


def test_bundle_holds_every_table_figure_export_and_setting_and_no_secret(batch):
    _check_bundle(_bundle(batch))


def test_redact_keeps_env_names_and_drops_anything_that_looks_like_a_key():
    assert bundle.redact({"api_key_env": "VLLM_KEY", "nested": {"token": "abc", "headers": [{"x": KEY}]},
                          "model": "qwen"}) == {
        "api_key_env": "VLLM_KEY", "nested": {"token": "<removed: secret>", "headers": [{"x": "<removed: secret>"}]},
        "model": "qwen"}


def test_the_bundle_keeps_every_generation_setting_and_removes_only_secrets(batch):
    ModelConfig.objects.filter(name="gpt-4o").update(
        generation={"max_new_tokens": 64, "temperature": 0.2, "top_p": 0.9, "seed": 7, "stop": ["\n\n"]},
        backend_settings={"base_url": "https://reader:pa55word@vllm.example.org:8000/v1?api_key=abc&region=eu",
                          "model": "gpt-4o", "api_key_env": "OPENAI_API_KEY", "api_key": KEY,
                          "tokens_per_minute": 90000, "headers": {"Authorization": "Bearer abc", "X-Team": "vision"},
                          "accessToken": "abc", "client_secret": "abc"})
    models = json.loads(_bundle(batch).read("settings/models.json"))
    gpt = next(m for m in models["models"] if m["name"] == "gpt-4o")
    assert gpt["generation"] == {"max_new_tokens": 64, "temperature": 0.2, "top_p": 0.9, "seed": 7, "stop": ["\n\n"]}
    removed = "<removed: secret>"
    assert gpt["backend_settings"] == {
        # a URL stays, without its password and secret query values
        "base_url": f"https://reader:{removed}@vllm.example.org:8000/v1?api_key={removed}&region=eu",
        "model": "gpt-4o", "api_key_env": "OPENAI_API_KEY", "api_key": removed, "tokens_per_minute": 90000,
        "headers": {"Authorization": removed, "X-Team": "vision"}, "accessToken": removed, "client_secret": removed}


def test_the_command_writes_the_bundle(batch, tmp_path):
    out = tmp_path / "study.zip"
    call_command("export_bundle", "--batch", "Human study", "--out", str(out))
    _check_bundle(zipfile.ZipFile(out))
    with pytest.raises(CommandError, match="No batch named 'nope'"):
        call_command("export_bundle", "--batch", "nope", "--out", str(tmp_path / "x.zip"))


FIRE_STEMS = ("fire_table_a1_ratings", "fire_ratings_by_split", "fire_ratings_by_source", "fire_ratings_by_turn",
              "fire_agreement", "fire_kappa", "fire_disagreements")


def test_a_fire_bundle_holds_every_table_of_its_report_each_as_downloaded_alone(fire_batch, raters):
    rate_all(raters)
    buffer = io.BytesIO()
    summary = bundle.bundle_write(fire_batch, buffer)
    archive = zipfile.ZipFile(buffer)
    expected = {"README.md", "instructions.md", "settings/prompts.json", "settings/models.json", "data/ratings.csv"}
    expected |= {f"tables/{stem}.{fmt}" for stem in (*FIRE_STEMS, "costs") for fmt in ("csv", "md", "tex", "json")}
    assert set(archive.namelist()) == expected
    readme = archive.read("README.md").decode()
    assert all(f"| {name} |" in readme for name in expected - {"README.md"})
    for name, stem, _ in FIRE_RATING_TABLES:
        for fmt in ("csv", "md", "tex", "json"):
            assert archive.read(f"tables/{stem}.{fmt}") == _export(fire_batch, name, fmt).encode(), (stem, fmt)
    assert "Krippendorff" in readme and "tables/fire_tables_4_5.*" in summary.skipped
    # FIRE's words for a rating study: conversations, ratings of feedback and responses, raters; no sessions
    intro = readme.split("| file | what |")[0]
    assert ("FIRE conversation rating batch: 2 conversations, 24 final ratings (1-5) of teacher feedback and "
            "refined student responses by 3 annotators.") in intro
    assert "resampling conversations" in intro and "Turns are numbered as the rating page shows them" in intro
    assert "session" not in intro and "tasks" not in intro and "pooled" not in intro
    assert not any(path.startswith("tables/fire_") and "rating" in path for path in summary.skipped)


def test_a_fire_bundle_without_ratings_says_why_its_tables_are_missing(fire_batch):
    buffer = io.BytesIO()
    summary = bundle.bundle_write(fire_batch, buffer)
    archive = zipfile.ZipFile(buffer)
    assert not any(name.startswith("tables/fire_") or name == "data/ratings.csv" for name in archive.namelist())
    missing = ", ".join(f"tables/{stem}.*" for stem in FIRE_STEMS) + ", data/ratings.csv"
    assert summary.skipped[missing] == "Batch 'fire-sample' has no final FIRE ratings to report yet."
    assert f"- {missing}: Batch 'fire-sample' has no final FIRE ratings" in archive.read("README.md").decode()


@pytest.fixture
def queued(monkeypatch):
    """The broker is the outside world: record what would be queued; the test runs the task itself."""
    sent: list[tuple[str, int]] = []
    monkeypatch.setattr("annotate.queue_contract.send_task", lambda name, args, **kw: sent.append((name, args[0])))
    return sent


def test_api_builds_the_bundle_as_a_job_then_members_download_it(api_client, researcher, batch, queued,
                                                                  django_capture_on_commit_callbacks):
    api_client.force_authenticate(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(f"/api/batches/{batch.id}/exports/bundle/")
    assert response.status_code == 202, response.json()
    job_id = response.json()["id"]
    assert queued == [("evaluation.tasks.bundle_export", job_id)]
    export_jobs.sessions_export_job_run(job_id=job_id)
    job = api_client.get(f"/api/jobs/{job_id}/").json()
    assert job["status"] == "succeeded", job
    assert job["report"]["filename"] == "human-study-study-bundle.zip" and "tables/table3_accuracy.csv" in \
        job["report"]["files"]
    download = api_client.get(job["report"]["download_url"])
    assert download.status_code == 200 and download["Content-Type"] == "application/zip"
    _check_bundle(zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))))

    admin = UserFactory(username="ada", role=User.Role.ADMIN)  # admins read every batch
    api_client.force_authenticate(admin)
    assert api_client.get(job["report"]["download_url"]).status_code == 200


@pytest.mark.parametrize("persona", ["outsider", "stranger"])
def test_only_members_and_admins_get_the_bundle(api_client, batch, persona, outsider, queued):
    user = outsider if persona == "outsider" else UserFactory(username="sam", role=User.Role.RESEARCHER)
    api_client.force_authenticate(user)
    response = api_client.post(f"/api/batches/{batch.id}/exports/bundle/")
    assert response.status_code == (403 if persona == "outsider" else 404)
    assert not Job.objects.exists() and not queued


def test_unknown_batch_is_404(api_client, researcher, queued):
    api_client.force_authenticate(researcher)
    assert api_client.post("/api/batches/999999/exports/bundle/").status_code == 404


def test_report_page_button_queues_the_bundle_and_its_page_links_the_zip(client, researcher, outsider, batch, queued,
                                                                         django_capture_on_commit_callbacks):
    client.force_login(researcher)
    page = client.get(f"/research/batches/{batch.id}/").content.decode()
    assert f'action="/research/batches/{batch.id}/exports/bundle/"' in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/research/batches/{batch.id}/exports/bundle/")
    job = Job.objects.get()
    assert response.status_code == 302 and response.url == f"/research/batches/{batch.id}/exports/{job.id}/"
    assert "Study bundle" in client.get(response.url).content.decode()
    export_jobs.sessions_export_job_run(job_id=job.id)
    done = client.get(response.url).content.decode()
    assert f"/api/batches/{batch.id}/exports/{job.id}/download/" in done and "human-study-study-bundle.zip" in done

    client.force_login(outsider)
    assert client.post(f"/research/batches/{batch.id}/exports/bundle/").status_code == 403
    assert Job.objects.count() == 1


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_builds_the_bundle(api_client, researcher, annotator, celery_worker_process):
    model = ModelConfigFactory(name="model-e2e", display_name="Model E2E", backend=ModelConfig.Backend.REPLAY)
    batch = make_batch(models=[model], tasks=0, members=[researcher])
    sessions_from_counts(batch, model, "Visual Logic", (3, 2, 1, 1), 12, annotators=(annotator,), with_rounds=True)
    services.outcome_recompute(batch_id=batch.id)
    api_client.force_authenticate(researcher)

    response = api_client.post(f"/api/batches/{batch.id}/exports/bundle/")
    assert response.status_code == 202, response.json()
    deadline, job = time.monotonic() + 60, {}
    while time.monotonic() < deadline:
        job = api_client.get(response["Location"]).json()
        if job["done"]:
            break
        time.sleep(0.2)
    assert job.get("status") == "succeeded", job
    archive = zipfile.ZipFile(io.BytesIO(b"".join(api_client.get(job["report"]["download_url"]).streaming_content)))
    assert archive.read("tables/table3_accuracy.csv").decode().splitlines()[1].startswith("Model E2E,")
    assert len(archive.read("data/sessions.jsonl").splitlines()) == 12
    Job.objects.get(pk=job["id"]).result_file.delete(save=False)  # the worker wrote it under the real MEDIA_ROOT
