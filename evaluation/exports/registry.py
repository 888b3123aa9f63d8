"""Every export of a batch, built one way for the three ways to reach it (pages, API, export_tables command).

A registry: each kind of work registers the exports it builds from its package's ``registration`` module
(evaluation.kinds.autodiscover imports them when the app loads), and this module knows none of them but the
batch's costs. The exports registered today:

| name          | formats                         | what                                              | registered by |
|---------------|---------------------------------|---------------------------------------------------|---------------|
| accuracy      | csv md tex json png svg         | Table 3 (png/svg: the table drawn as a picture)   | interfeedback |
| correction    | csv md tex json png svg         | Table 4                                           | interfeedback |
| fig4 / fig5   | png svg                         | corrected-round distribution per model / category | interfeedback |
| sessions      | jsonl fire                      | one JSON line per session / FIRE conversations    | interfeedback |
| fire-ratings  | csv md tex json                 | FIRE Table A1 (mean ratings of feedback/responses)| fire          |
| fire-summary-split, -source, -turn | csv md tex json | FIRE mean ratings, 95% CIs, per split/source/turn | fire  |
| fire-agreement | csv md tex json                | Krippendorff's alpha (ordinal, interval), kappa   | fire          |
| fire-kappa    | csv md tex json                 | pairwise quadratic-weighted kappa                 | fire          |
| fire-disagreements | csv md tex json            | the 20 turns raters disagree on most              | fire          |
| preference-pairs, -agreement, -kappa, -scores | csv md tex json | the preference report's four tables | preference |
| preference-responses | jsonl csv                    | every final judgment, per response (and rater)    | preference    |
| preference-dpo | jsonl                              | chosen/rejected pairs for reward-model training   | preference    |
| bench         | csv md tex json                 | InterFeedback-Bench Tables 1/2 (latest bench run) | bench         |
| fire-fixed    | csv md tex json                 | FIRE Tables 2 and 3 (latest fixed-dialogue run)   | bench         |
| fire-free     | csv md tex json                 | FIRE Tables 4 and 5 (latest free-dialogue run)    | bench         |

| costs         | csv md tex json                 | tokens and cost per model, the batch's budget     | this module   |
| participants  | csv json                        | invited participants: progress, quality, decisions| participants  |
| surveys       | csv json                        | their questionnaire answers, one row each         | participants  |
| approvals     | txt                             | approved participants' platform ids, one a line   | participants  |
| bonuses       | csv                             | ``participant_id,amount`` of approved participants| participants  |

The three run tables take the batch's latest finished run of their protocol, or a given finished run
(evaluation.bench.registration.build_run_export, ``export_tables --run ID``).

A batch's kind may refuse another kind's exports with a reason (``StudyKind.refuses``: a preference batch has no
sessions, so ``sessions`` and Tables 3-4 name its own exports instead of writing nothing).

Sessions are large (299k sessions: minutes, hundreds of MB). Pages and the API export them as a background job
(evaluation/exports/jobs.py, a Job row with progress and a file to download); their direct downloads are kept for
small selections only (`sessions_direct_check`). The export_tables command writes any size synchronously.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.utils.text import slugify

from annotate.errors import ApplicationError, NotFound
from annotate.models import Batch
from evaluation.exports.costs import costs_table
from evaluation.exports.filters import NO_FILTERS, ReportFilters
from evaluation.exports.renderers.table_image import render_table_image
from evaluation.exports.renderers.tables import render
from evaluation.kinds import kind_of
from evaluation.table import Table

TABLE_FORMATS = ("csv", "md", "tex", "json")
IMAGE_FORMATS = ("png", "svg")
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "md": "text/markdown; charset=utf-8",
    "tex": "application/x-tex; charset=utf-8",
    "json": "application/json",
    "png": "image/png",
    "svg": "image/svg+xml",
    "jsonl": "application/jsonl; charset=utf-8",
    "txt": "text/plain; charset=utf-8",
    "fire": "application/jsonl; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
    "zip": "application/zip",  # a data file with the images it names and its dataset card
}
EXTENSIONS = {"fire": "fire.jsonl"}

# What a builder returns: a table (rendered in the asked format, png/svg drawn as a picture), several tables (one
# file), finished bytes (a figure), or the lines of a large export, streamed and never held in memory.
Built = Table | list[Table] | bytes | Iterator[bytes]
Builder = Callable[[Batch, str, ReportFilters], Built]
Size = Callable[[Batch, ReportFilters], int]

# name -> formats, in the order of registration; the builders and sizes beside them.
EXPORTS: dict[str, tuple[str, ...]] = {}
_BUILDERS: dict[str, Builder] = {}
_SIZES: dict[str, Size] = {}


def register_export(name: str, formats: tuple[str, ...], build: Builder, *, size: Size | None = None) -> None:
    """Add an export: ``build(batch, fmt, filters)`` makes it (raising ApplicationError with a reason when the
    batch cannot have it); ``size(batch, filters)`` says how many records it holds, for a job's progress."""
    if name in EXPORTS:
        raise ValueError(f"The export {name!r} is registered twice.")
    if unknown := [fmt for fmt in formats if fmt not in CONTENT_TYPES]:
        raise ValueError(f"The export {name!r} names formats without a content type: {unknown}.")
    EXPORTS[name], _BUILDERS[name] = tuple(formats), build
    if size is not None:
        _SIZES[name] = size


def export_size(batch: Batch, name: str, filters: ReportFilters = NO_FILTERS) -> int:
    """How many records the export holds (0 for one that does not count its records)."""
    return _SIZES[name](batch, filters) if name in _SIZES else 0


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

    Counted as the sessions export counts them (the outcome counters' rows: one indexed count), the numbers the
    report page shows.
    """
    count = export_size(batch, "sessions", filters)
    if count > DIRECT_SESSIONS_LIMIT:
        raise ApplicationError(
            f"{count:,} sessions match: direct downloads stop at {DIRECT_SESSIONS_LIMIT:,}. Export them as a "
            f"background job instead: the report page's \"Export sessions (JSONL)\" button, or "
            f"POST /api/batches/{batch.id}/exports/sessions/ (then poll the job and download its file).",
            code="export_too_large",
        )


def export_filename(batch: Batch, name: str, fmt: str) -> str:
    return f"{slugify(batch.name) or batch.id}-{name}.{EXTENSIONS.get(fmt, fmt)}"


def build_export(batch: Batch, name: str, fmt: str, filters: ReportFilters = NO_FILTERS) -> Export:
    check_export(name, fmt)
    if why := kind_of(batch).refuses(batch, name):
        raise ApplicationError(why, code="not_for_this_kind")
    return export_of(batch, name, fmt, _BUILDERS[name](batch, fmt, filters))


def export_of(batch: Batch, name: str, fmt: str, built: Built) -> Export:
    """What a builder made, rendered in ``fmt`` as the file of the batch's export ``name``."""
    filename, content_type = export_filename(batch, name, fmt), CONTENT_TYPES[fmt]
    if isinstance(built, Table):
        content = render_table_image(built, fmt) if fmt in IMAGE_FORMATS else render(built, fmt).encode()
        return Export(filename, content_type, content)
    if isinstance(built, list):
        return Export(filename, content_type, render_tables(built, fmt).encode())
    if isinstance(built, bytes):
        return Export(filename, content_type, built)
    return Export(filename, content_type, stream=built)


def render_tables(tables: list[Table], fmt: str) -> str:
    """Several tables in one file: a JSON list, or one after another."""
    if fmt == "json":
        return "[" + ",\n".join(render(table, "json") for table in tables) + "]\n"
    blank_line = "\r\n" if fmt == "csv" else "\n\n"  # CSV lines end in CRLF (renderers.tables.to_csv)
    return blank_line.join(render(table, fmt) for table in tables)


register_export("costs", TABLE_FORMATS, lambda batch, fmt, filters: costs_table(batch))
