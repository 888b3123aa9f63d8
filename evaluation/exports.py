"""Every export of a batch, built one way for the three ways to reach it (pages, API, export_tables command).

| name          | formats                         | what                                              |
|---------------|---------------------------------|---------------------------------------------------|
| accuracy      | csv md tex json png svg         | Table 3 (png/svg: the table drawn as a picture)   |
| correction    | csv md tex json png svg         | Table 4                                           |
| fig4 / fig5   | png svg                         | corrected-round distribution per model / category |
| fire-ratings  | csv md tex json                 | FIRE Table A1 (mean ratings of feedback/responses)|
| fire-summary-split, -source, -turn | csv md tex json | FIRE mean ratings, 95% CIs, per split/source/turn |
| fire-agreement | csv md tex json                | Krippendorff's alpha (ordinal, interval), kappa   |
| fire-kappa    | csv md tex json                 | pairwise quadratic-weighted kappa                 |
| fire-disagreements | csv md tex json            | the 20 turns raters disagree on most              |
| sessions      | jsonl fire                      | one JSON line per session / FIRE conversations    |
| bench         | csv md tex json                 | InterFeedback-Bench Tables 1/2 (latest bench run) |
| fire-fixed    | csv md tex json                 | FIRE Tables 2 and 3 (latest fixed-dialogue run)   |
| fire-free     | csv md tex json                 | FIRE Tables 4 and 5 (latest free-dialogue run)    |
| costs         | csv md tex json                 | tokens and cost per model, the batch's budget     |

Sessions are large (299k sessions: minutes, hundreds of MB). Pages and the API export them as a background job
(export_jobs.py, a Job row with progress and a file to download); their direct downloads are kept for small
selections only (`sessions_direct_check`). The export_tables command writes any size synchronously.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.utils.text import slugify

from annotate.errors import ApplicationError, NotFound
from annotate.models import Batch
from evaluation import selectors
from evaluation.bench import bench_paper_table, latest_run
from evaluation.costs import costs_table
from evaluation.exporters.plots import render_plot
from evaluation.exporters.sessions import jsonl_lines
from evaluation.exporters.table_image import render_table_image
from evaluation.exporters.tables import render
from evaluation.filters import NO_FILTERS, ReportFilters
from evaluation.fire.reports import FIRE_TABLES
from evaluation.fire.runs import fire_run_tables
from evaluation.table import Table

TABLE_FORMATS = ("csv", "md", "tex", "json")
IMAGE_FORMATS = ("png", "svg")
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
EXPORTS: dict[str, tuple[str, ...]] = {
    "accuracy": TABLE_FORMATS + IMAGE_FORMATS,
    "correction": TABLE_FORMATS + IMAGE_FORMATS,
    "fig4": IMAGE_FORMATS,
    "fig5": IMAGE_FORMATS,
    **dict.fromkeys(FIRE_RATING_EXPORTS, TABLE_FORMATS),
    "sessions": ("jsonl", "fire"),
    "bench": TABLE_FORMATS,
    "fire-fixed": TABLE_FORMATS,
    "fire-free": TABLE_FORMATS,
    "costs": TABLE_FORMATS,
}
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "md": "text/markdown; charset=utf-8",
    "tex": "application/x-tex; charset=utf-8",
    "json": "application/json",
    "png": "image/png",
    "svg": "image/svg+xml",
    "jsonl": "application/jsonl; charset=utf-8",
    "fire": "application/jsonl; charset=utf-8",
}
EXTENSIONS = {"fire": "fire.jsonl"}


@dataclass
class Export:
    filename: str
    content_type: str
    content: bytes | None = None
    stream: Iterator[bytes] | None = None  # large exports (sessions) are streamed, never held in memory

    def read(self) -> bytes:
        return self.content if self.content is not None else b"".join(self.stream or ())


def check_export(name: str, fmt: str) -> None:
    """Unknown export -> NotFound; a format the export does not have -> ApplicationError (400)."""
    if name not in EXPORTS:
        raise NotFound(f"Unknown export {name!r}; expected one of {', '.join(EXPORTS)}.")
    if fmt not in EXPORTS[name]:
        raise ApplicationError(
            f"Unknown format {fmt!r} for {name}; expected one of {', '.join(EXPORTS[name])}.", code="bad_format"
        )


# Direct (in-request) session downloads stop here: about ten seconds of a web worker. Larger: the export job.
DIRECT_SESSIONS_LIMIT = 10_000


def sessions_direct_check(batch: Batch, filters: ReportFilters = NO_FILTERS) -> None:
    """Refuse (400) a direct sessions download that would hold a web worker for long; name the job instead.

    Counted from the outcome counters' rows (one indexed count), the numbers the report page shows.
    """
    count = selectors.counted_sessions(batch, filters).count()
    if count > DIRECT_SESSIONS_LIMIT:
        raise ApplicationError(
            f"{count:,} sessions match: direct downloads stop at {DIRECT_SESSIONS_LIMIT:,}. Export them as a "
            f"background job instead: the report page's \"Export sessions (JSONL)\" button, or "
            f"POST /api/batches/{batch.id}/exports/sessions/ (then poll the job and download its file).",
            code="export_too_large",
        )


def export_filename(batch: Batch, name: str, fmt: str) -> str:
    return f"{slugify(batch.name) or batch.id}-{name}.{EXTENSIONS.get(fmt, fmt)}"


def _paper_table(batch: Batch, name: str, filters: ReportFilters) -> Table:
    accuracy, correction = selectors.report_tables(batch, selectors.outcome_counts(batch, filters), filters)
    return accuracy if name == "accuracy" else correction


def build_export(batch: Batch, name: str, fmt: str, filters: ReportFilters = NO_FILTERS) -> Export:
    check_export(name, fmt)
    filename, content_type = export_filename(batch, name, fmt), CONTENT_TYPES[fmt]
    if name == "sessions":
        lines = jsonl_lines(selectors.export_sessions(batch, filters), fmt)
        return Export(filename, content_type, stream=(line.encode() for line in lines))
    if name in ("fig4", "fig5"):
        counts = selectors.outcome_counts(batch, filters)
        if not counts:
            raise ApplicationError("No counted sessions to plot yet (for these filters).", code="no_sessions")
        return Export(filename, content_type, render_plot(name, counts, fmt, **selectors.layout(batch, counts)))
    # FIRE rating tables are built by evaluation.fire.reports (a clear error for a batch without final ratings).
    if name in ("fire-fixed", "fire-free"):
        tables = fire_run_tables(latest_run(batch, protocol=name.replace("-", "_")))
        return Export(filename, content_type, render_tables(tables, fmt).encode())
    if name == "bench":
        table = bench_paper_table(latest_run(batch))
    elif name in FIRE_RATING_EXPORTS:
        table = fire_rating_table(batch, name)
    elif name == "costs":
        table = costs_table(batch)
    else:
        table = _paper_table(batch, name, filters)
    if fmt in IMAGE_FORMATS:
        return Export(filename, content_type, render_table_image(table, fmt))
    return Export(filename, content_type, render(table, fmt).encode())


def fire_rating_table(batch: Batch, name: str) -> Table:
    """One of FIRE_RATING_EXPORTS as a Table (the bundle renders it once into every format)."""
    what, by = FIRE_RATING_EXPORTS[name]
    return FIRE_TABLES[what](batch, by=by)


def render_tables(tables: list[Table], fmt: str) -> str:
    """Several tables in one file: a JSON list, or one after another."""
    if fmt == "json":
        return "[" + ",\n".join(render(table, "json") for table in tables) + "]\n"
    blank_line = "\r\n" if fmt == "csv" else "\n\n"  # CSV lines end in CRLF (exporters.tables.to_csv)
    return blank_line.join(render(table, fmt) for table in tables)
