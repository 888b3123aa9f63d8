"""What FIRE rating batches add to the registries: the report's FIRE tables as exports (each byte for byte what
`export_fire --what ... --by ...` writes), and their kind (report sections, downloads, study bundle)."""

from __future__ import annotations

from collections.abc import Iterator

from annotate.errors import ApplicationError
from annotate.models import Batch
from evaluation import kinds
from evaluation.exports import registry as exports
from evaluation.exports.bundle import BundleFile, run_table_files
from evaluation.exports.renderers.tables import render
from evaluation.fire.reports import FIRE_TABLES, fire_rating_counts, fire_ratings_long
from evaluation.fire.views import report_sections
from evaluation.table import Table

# A FIRE rating batch's tables: export name -> (`export_fire --what`, `--by`), so each file is byte for byte what
# that command and the FIRE report page's own links write.
FIRE_RATING_EXPORTS: dict[str, tuple[str, str]] = {
    "fire-ratings": ("table-a1", "split"),
    "fire-summary-split": ("summary", "split"),
    "fire-summary-source": ("summary", "source"),
    "fire-summary-turn": ("summary", "turn"),
    "fire-agreement": ("agreement", "split"),
    "fire-kappa": ("kappa", "split"),
    "fire-disagreements": ("disagreements", "split"),
}
# (export name, file stem, what it is) in the study bundle, as on the report page.
FIRE_RATING_TABLES = (
    ("fire-ratings", "fire_table_a1_ratings", "FIRE Table A1: mean rating of feedback and of responses per split, "
                                              "95% bootstrap CIs"),
    ("fire-summary-split", "fire_ratings_by_split", "Mean FIRE ratings with 95% CIs per split and turn kind"),
    ("fire-summary-source", "fire_ratings_by_source", "Mean FIRE ratings with 95% CIs per source and turn kind"),
    ("fire-summary-turn", "fire_ratings_by_turn", "Mean FIRE ratings with 95% CIs per turn index"),
    ("fire-agreement", "fire_agreement", "Inter-rater agreement: Krippendorff's alpha (ordinal and interval) and "
                                         "mean pairwise kappa, for the batch and per source"),
    ("fire-kappa", "fire_kappa", "Pairwise quadratic-weighted Cohen's kappa per rater pair"),
    ("fire-disagreements", "fire_disagreements", "The 20 turns with the largest rater disagreement"),
)


def fire_rating_table(batch: Batch, name: str) -> Table:
    """One of FIRE_RATING_EXPORTS as a Table (the bundle renders it once into every format)."""
    what, by = FIRE_RATING_EXPORTS[name]
    return FIRE_TABLES[what](batch, by=by)


def _rating_files(batch: Batch, skipped: dict[str, str]) -> Iterator[BundleFile]:
    """Each table built once and rendered in every format: bootstrap CIs and alpha are the slow part, and the
    exports' fixed seed makes each file the same as its single download."""
    missing: dict[str, list[str]] = {}  # why -> what is missing (no ratings yet: every table, for one reason)
    why_no_ratings = ""
    for name, stem, what in FIRE_RATING_TABLES:
        try:
            table = fire_rating_table(batch, name)
        except ApplicationError as reason:
            missing.setdefault(reason.message, []).append(f"tables/{stem}.*")
            why_no_ratings = why_no_ratings or reason.message
            continue
        for fmt in exports.TABLE_FORMATS:
            yield BundleFile(f"tables/{stem}.{fmt}", f"{what} ({fmt})", render(table, fmt).encode())
    ratings = fire_ratings_long(batch)
    if ratings.rows:
        yield BundleFile("data/ratings.csv", "Every rating in long format (conversation, turn, annotator, score)",
                         render(ratings, "csv").encode())
    else:  # the rows Table A1 counts, so it has said why
        missing.setdefault(why_no_ratings, []).append("data/ratings.csv")
    for reason, paths in missing.items():
        skipped[", ".join(paths)] = reason


def bundle_summary(batch: Batch, sessions: int) -> str:
    conversations, ratings, raters = fire_rating_counts(batch)
    return (f"FIRE conversation rating batch: {conversations:,} conversations, {ratings:,} final ratings (1-5) of "
            f"teacher feedback and refined student responses by {raters:,} annotators. The rating tables cover "
            "every final rating (drafts are left out); means have two decimals, rounded half up, with 95% CIs "
            "by percentile bootstrap resampling conversations. Turns are numbered as the rating page shows "
            "them (1 = the first student response). FIRE runs' tables (Tables 2-5), where the batch has "
            "finished runs, come from the latest of each.")


def bundle_files(batch: Batch, skipped: dict[str, str]) -> Iterator[BundleFile]:
    yield from run_table_files(batch, skipped, noted=("fire-fixed", "fire-free"))
    yield from _rating_files(batch, skipped)


for _name in FIRE_RATING_EXPORTS:
    exports.register_export(_name, exports.TABLE_FORMATS,
                            lambda batch, fmt, filters, name=_name: fire_rating_table(batch, name))
# Its report offers its own tables and the common actions: no InterFeedback sessions to count, browse or export,
# and no session-based quality page (FIRE's raters are compared by the agreement tables).
kinds.register(kinds.StudyKind(kind=Batch.Kind.FIRE, downloads=tuple(FIRE_RATING_EXPORTS),
                               bundle_files=bundle_files, report_sections=report_sections,
                               bundle_summary=bundle_summary))
