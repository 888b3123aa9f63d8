"""What preference batches add to the registries: the four report tables and the raw judgments as exports (each
byte for byte what the preference report's own downloads write), and their kind: the report page's section, its
downloads, the quality page, and a study bundle holding the tables, both raw exports and the images rated."""

from __future__ import annotations

from collections.abc import Iterator

from annotate.errors import ApplicationError
from annotate.models import Batch, ImageBlob, Ranking, Rating
from evaluation import kinds
from evaluation.exports import registry as exports
from evaluation.exports.bundle import BundleFile
from evaluation.exports.filters import ReportFilters
from evaluation.exports.renderers.tables import render
from evaluation.preference import dataset_files, records
from evaluation.preference.quality import preference_quality
from evaluation.preference.reports import RAW_EXPORTS, preference_report, preference_table
from evaluation.preference.selectors import check_preference_batch, preference_data, rated_items
from evaluation.preference.views import report_sections

# (export name, report table, file stem, what it is) in the study bundle, as on the preference report.
TABLES = (
    ("preference-pairs", "pairs", "preference_pairs", "Win / tie / loss and win rate (95% bootstrap CI over items) "
                                                      "per model pair"),
    ("preference-agreement", "agreement", "preference_agreement", "Rater agreement on pairwise preferences: "
                                                                  "observed, Krippendorff's alpha, mean kappa"),
    ("preference-kappa", "kappa", "preference_kappa", "Quadratic-weighted Cohen's kappa per rater pair"),
    ("preference-scores", "scores", "preference_scores", "Mean helpfulness, faithfulness and ethics (1-5) per "
                                                         "model, 95% bootstrap CIs over items"),
)
RAW = (
    ("preference-responses", "jsonl", "data/preference_responses.jsonl", "One JSON line per response: the question, "
     "the image, the response and its model, every rater's three scores, reason and place in the ranking"),
    ("preference-responses", "csv", "data/preference_responses.csv", "The same, one row per (response, rater)"),
    ("preference-dpo", "jsonl", "data/preference_dpo.jsonl", "One JSON line per rater's strict preference between "
     "two responses: prompt, chosen, rejected and images as TRL and Hugging Face datasets take them, with the rater, "
     "the models, scores, reasons and the item's votes (ties left out)"),
)
PARQUET_WHAT = "The same records as Parquet with the images inside (load_dataset(\"parquet\", ...) gives PIL images)"
DOWNLOADS = (*(name for name, *_ in TABLES), "preference-responses", "preference-dpo", "costs")
# InterFeedback's exports, which a preference batch has nothing for: refused with a pointer to its own.
NOT_FOR_PREFERENCE = ("accuracy", "correction", "fig4", "fig5", "sessions")


def _judged(batch: Batch) -> None:
    """Raw exports need a final judgment: an empty file would look like a broken export."""
    check_preference_batch(batch)
    if not (Ranking.objects.filter(conversation__batch=batch, is_final=True).exists()
            or Rating.objects.filter(turn__conversation__batch=batch, is_final=True).exists()):
        raise ApplicationError(f"Batch {batch.name!r} has no final judgments to export yet.", code="no_judgments")


def _asked(filters: ReportFilters) -> dataset_files.SplitAsked | None:
    """The train/test split by item the download asked for (``test_fraction``, ``split_seed``), if any."""
    if filters.test_fraction is None:
        return None
    return dataset_files.SplitAsked(test_fraction=filters.test_fraction, seed=filters.split_seed)


def _raw(name: str, batch: Batch, fmt: str, filters: ReportFilters) -> exports.Built:
    _judged(batch)
    asked = _asked(filters)
    if fmt == "zip":
        return dataset_files.export_zip(batch, name, asked)
    split = dataset_files.batch_split(batch, asked)
    if fmt == "parquet":
        return dataset_files.export_parquet(batch, name, split)
    if name == "preference-dpo":
        return records.dpo_jsonl(batch, split)
    return records.responses_table(batch, split) if fmt == "csv" else records.responses_jsonl(batch, split)


def refusal(batch: Batch, name: str) -> str | None:
    if name not in NOT_FOR_PREFERENCE:
        return None
    return (f"Batch {batch.name!r} is a {batch.get_kind_display()} batch: it has no InterFeedback sessions, so no "
            f"{name}. Its judgments are exported as preference-responses (jsonl, csv) and preference-dpo (jsonl), "
            "its tables as preference-pairs, preference-agreement, preference-kappa and preference-scores.")


def bundle_summary(batch: Batch, sessions: int) -> str:
    data = preference_data(batch)
    compared = "models named by each record" if data.labelled_by == "models" else "candidates by position"
    return (f"Preference rating batch (MM-RLHF style): {data.conversations:,} items, {data.rankings:,} final rankings "
            f"by {data.raters:,} raters, {compared}. Tables count final judgments only (drafts are left out): win "
            "rates count ties as half, with 95% CIs by percentile bootstrap resampling items; agreement counts every "
            "comparison as coded and mirrored (see the tables' notes). data/ holds every final judgment, per "
            "response and as chosen/rejected pairs for reward-model training, with the images they refer to.")


def bundle_files(batch: Batch, skipped: dict[str, str]) -> Iterator[BundleFile]:
    try:
        report = preference_report(batch)
        if not report.data.rankings:
            raise ApplicationError(f"Batch {batch.name!r} has no final rankings to report yet.", code="no_rankings")
    except ApplicationError as reason:
        skipped["tables/preference_*"] = reason.message
    else:
        tables = report.tables()
        for _, table_name, stem, what in TABLES:  # each table built once, rendered in every format
            for fmt in exports.TABLE_FORMATS:
                yield BundleFile(f"tables/{stem}.{fmt}", f"{what} ({fmt})", render(tables[table_name], fmt).encode())
    try:
        _judged(batch)
    except ApplicationError as reason:
        skipped["data/preference_*"] = reason.message
        return
    for name, fmt, path, what in RAW:
        yield BundleFile(path, what, lines=exports.build_export(batch, name, fmt).stream) if fmt == "jsonl" else \
            BundleFile(path, what, exports.build_export(batch, name, fmt).read())
    configs = []
    for name in ("preference-dpo", "preference-responses"):
        config, files = dataset_files.parquet_files(batch, name, None)
        configs.append(config)
        for path, content in files.items():
            yield BundleFile(f"data/{path}", f"{PARQUET_WHAT}: {name}", content)
    yield BundleFile("data/README.md", "The dataset card of data/: features, splits and sizes (YAML front matter), "
                     "how the pairs were made, the raters' agreement; load_dataset(\"data\") reads it",
                     dataset_files.dataset_card(batch, configs, None))
    blobs = {item.image_blob: item.image for item in rated_items(batch) if item.image_blob is not None}
    for blob in ImageBlob.objects.filter(pk__in=list(blobs)).order_by("sha256"):
        with blob.file.open("rb") as handle:
            yield BundleFile(f"data/{blobs[blob.pk]}", "An image of a rated item (named by its SHA-256, as the "
                             "data files name it)", handle.read())


for _export, _table, _stem, _what in TABLES:
    exports.register_export(_export, exports.TABLE_FORMATS,
                            lambda batch, fmt, filters, table=_table: preference_table(batch, table))
for _export in ("preference-responses", "preference-dpo"):
    exports.register_export(_export, dict(RAW_EXPORTS)[_export],
                            lambda batch, fmt, filters, name=_export: _raw(name, batch, fmt, filters))
kinds.register(kinds.StudyKind(kind=Batch.Kind.PREFERENCE, downloads=DOWNLOADS, bundle_files=bundle_files,
                               report_sections=report_sections, bundle_summary=bundle_summary, refuses=refusal,
                               quality=preference_quality, report_actions=("quality", *kinds.COMMON_ACTIONS)))
