"""What InterFeedback-Human batches add to the registries: Tables 3 and 4, Figs. 4 and 5 and the sessions as
exports, and their kind (its report's downloads, its study bundle, counted sessions)."""

from __future__ import annotations

from collections.abc import Iterator

from annotate.errors import ApplicationError
from annotate.models import Batch
from evaluation import kinds
from evaluation.exports import registry as exports
from evaluation.exports.bundle import FIGURE_FORMATS, BundleFile, run_table_files, table_files
from evaluation.exports.filters import ReportFilters
from evaluation.exports.renderers.sessions import SESSION_FORMATS, jsonl_lines
from evaluation.interfeedback import selectors
from evaluation.interfeedback.plots import render_plot
from evaluation.table import Table

# (export name, file stem, what it is) in the study bundle
PAPER_TABLES = (
    ("accuracy", "table3_accuracy", "Table 3: accuracy (%) per model and category, Average pooled over sessions "
                                    "(csv and json: each value's sessions beside it, (k) right of (n))"),
    ("correction", "table4_correction", "Table 4: correction rate (%) per feedback round (# Round) per model and "
                                        "category (csv and json: (k) corrected of (n) wrong in round 0 beside "
                                        "each value)"),
)
FIGURES = (
    ("fig4", "fig4_corrected_round_by_model", "Fig. 4: round in which sessions were corrected, per model"),
    ("fig5", "fig5_corrected_round_by_category", "Fig. 5: the same per category (panels in the batch's order)"),
)
SESSION_FILES = (
    ("jsonl", "data/sessions.jsonl", "One JSON line per completed session with every round (feedback, answer, "
                                     "verdict, timings); annotators by pseudonym"),
    ("fire", "data/sessions.fire.jsonl", "The same sessions as FIRE conversations (student = model, teacher = "
                                         "human)"),
)
# The report's downloads; the run tables are registered by evaluation.bench.
DOWNLOADS = ("accuracy", "correction", "fig4", "fig5", "sessions", "bench", "fire-fixed", "fire-free", "costs")


def _paper_table(batch: Batch, name: str, filters: ReportFilters) -> Table:
    accuracy, correction = selectors.report_tables(batch, selectors.outcome_counts(batch, filters), filters)
    return accuracy if name == "accuracy" else correction


def _figure(batch: Batch, name: str, fmt: str, filters: ReportFilters) -> bytes:
    counts = selectors.outcome_counts(batch, filters)
    if not counts:
        raise ApplicationError("No counted sessions to plot yet (for these filters).", code="no_sessions")
    return render_plot(name, counts, fmt, **selectors.layout(batch, counts))


def _sessions(batch: Batch, fmt: str, filters: ReportFilters) -> Iterator[bytes]:
    return (line.encode() for line in jsonl_lines(selectors.export_sessions(batch, filters), fmt))


def _sessions_counted(batch: Batch, filters: ReportFilters) -> int:
    """From the outcome counters' rows (one indexed count): the numbers the report page shows."""
    return selectors.counted_sessions(batch, filters).count()


def bundle_summary(batch: Batch, sessions: int) -> str:
    return (f"{batch.get_kind_display()} batch, {batch.task_count:,} tasks, {sessions:,} completed sessions "
            "exported. Tables and figures cover every counted session (no filters); percentages have one "
            "decimal, rounded half up; Average is pooled over sessions.")


def bundle_files(batch: Batch, skipped: dict[str, str]) -> Iterator[BundleFile]:
    for name, stem, what in PAPER_TABLES:
        yield from table_files(batch, name, stem, what)
    yield from run_table_files(batch, skipped, noted=("bench", "fire-fixed", "fire-free"))
    for name, stem, what in FIGURES:
        for fmt in FIGURE_FORMATS:
            try:
                content = exports.build_export(batch, name, fmt).read()
            except ApplicationError as reason:
                skipped[f"figures/{stem}.*"] = reason.message
                break
            yield BundleFile(f"figures/{stem}.{fmt}", f"{what} ({fmt})", content)
    for fmt, path, what in SESSION_FILES:
        yield BundleFile(path, what, lines=exports.build_export(batch, "sessions", fmt).stream)


for _name in ("accuracy", "correction"):
    exports.register_export(_name, exports.TABLE_FORMATS + exports.IMAGE_FORMATS,
                            lambda batch, fmt, filters, name=_name: _paper_table(batch, name, filters))
for _name in ("fig4", "fig5"):
    exports.register_export(_name, exports.IMAGE_FORMATS,
                            lambda batch, fmt, filters, name=_name: _figure(batch, name, fmt, filters))
exports.register_export("sessions", SESSION_FORMATS, _sessions, size=_sessions_counted)
kinds.register(kinds.StudyKind(kind=Batch.Kind.INTERFEEDBACK, downloads=DOWNLOADS, bundle_files=bundle_files,
                               counts_sessions=True, bundle_summary=bundle_summary,
                               report_actions=("recount", "sessions", "quality", *kinds.COMMON_ACTIONS,
                                               "sessions-export")))
