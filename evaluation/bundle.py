"""The study bundle: one zip with everything a paper's appendix needs from a batch.

Every table (csv, md, tex, json), every figure (png, svg), the sessions and ratings exports, the instructions the
annotators saw, the prompt templates and the models' settings (names of API-key variables, never keys), and a
README.md saying what each file is. Built from the same functions as the single exports (evaluation.exports), so
a table in the bundle is byte for byte the table downloaded alone.

The page and the API build it as an export job (export_jobs.py, a worker writes the zip with progress); the
``export_bundle`` command writes it directly.
"""

from __future__ import annotations

import json
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from annotate.errors import ApplicationError
from annotate.modelconfigs.validation import looks_like_a_key
from annotate.models import Batch, ModelConfig
from annotate.sessions.prompts import DEFAULT_TEMPLATES
from evaluation import exports
from evaluation.exporters.tables import render
from evaluation.fire.reports import fire_ratings_long
from evaluation.models import OutcomeCounter

TABLE_FORMATS = ("csv", "md", "tex", "json")
FIGURE_FORMATS = ("png", "svg")
# (export name, file stem, what it is): the tables of an InterFeedback batch, then those of runs and other kinds.
INTERFEEDBACK_TABLES = (
    ("accuracy", "table3_accuracy", "Table 3: accuracy (%) per model and category, Average pooled over sessions"),
    ("correction", "table4_correction", "Table 4: correction rate (%) per feedback round (# Round) per model and "
                                        "category"),
)
RUN_TABLES = (
    ("bench", "bench_tables_1_2", "InterFeedback-Bench Tables 1/2 (latest benchmark run)"),
    ("fire-fixed", "fire_tables_2_3", "FIRE Tables 2 and 3 (latest fixed-dialogue run)"),
    ("fire-free", "fire_tables_4_5", "FIRE Tables 4 and 5 (latest free-dialogue run)"),
)
# A FIRE rating batch's tables (evaluation.exports.FIRE_RATING_EXPORTS), as on its report page.
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
FIGURES = (
    ("fig4", "fig4_corrected_round_by_model", "Fig. 4: round in which sessions were corrected, per model"),
    ("fig5", "fig5_corrected_round_by_category", "Fig. 5: the same per category (panels in the batch's order)"),
)
PROGRESS_EVERY = 1000  # session lines between two progress reports
# Setting keys whose value is a secret however it looks; their *_env siblings hold a variable's name and stay.
_SECRET_WORDS = ("key", "secret", "token", "password", "authorization")

# (what is being written, session lines written so far: two per session, one in each sessions file)
Progress = Callable[[str, int], None]


@dataclass
class BundleSummary:
    files: list[str]
    skipped: dict[str, str]  # what is missing from the bundle -> why
    sessions: int
    seconds: float


def bundle_filename(batch: Batch) -> str:
    return exports.export_filename(batch, "study-bundle", "zip")


# --- settings without secrets ---------------------------------------------------------------------------------

def _is_secret(key: str, value) -> bool:
    name = key.lower()
    if name.endswith("_env"):
        return isinstance(value, str) and looks_like_a_key(value)  # a key pasted where its variable's name goes
    return any(word in name for word in _SECRET_WORDS) or isinstance(value, str) and looks_like_a_key(value)


def redact(settings):
    """The settings with any secret replaced by a marker: only names of environment variables leave the app."""
    if isinstance(settings, dict):
        return {key: "<removed: secret>" if _is_secret(str(key), value) and not isinstance(value, dict | list)
                else redact(value) for key, value in settings.items()}
    if isinstance(settings, list):
        return [redact(item) for item in settings]
    return settings


def models_document(batch: Batch) -> dict:
    models = list(batch.models_to_evaluate.order_by("name")) or list(
        ModelConfig.objects.filter(pk__in=OutcomeCounter.objects.filter(batch=batch).values("model_config_id"))
        .order_by("name"))  # no models set (a bench or replayed batch): the models its counted sessions ran
    return {
        "batch": {"name": batch.name, "kind": batch.kind, "overlap": batch.overlap, "max_rounds": batch.max_rounds,
                  "gold_rate": batch.gold_rate, "allow_repeat_tasks": batch.allow_repeat_tasks,
                  "category_order": batch.category_order, "task_count": batch.task_count,
                  # the serving order (SPEC §3 item 9): re-run a study in the same order from these
                  "serving_seed": batch.serving_seed,
                  "serving_models": _model_names(batch.serving_models),
                  "items_per_participant": batch.items_per_participant,
                  "skips_count_toward_share": batch.skips_count_toward_share,
                  "max_counted_skips": batch.max_counted_skips},
        "models": [{"name": m.name, "display_name": m.label, "backend": m.backend,
                    "backend_settings": redact(m.backend_settings), "generation": redact(m.generation),
                    "queue": m.queue_name} for m in models],
        "note": "API keys are never stored or exported: api_key_env names the environment variable that holds one.",
    }


def _model_names(model_ids: list[int]) -> list[str]:
    names = dict(ModelConfig.objects.filter(pk__in=model_ids).values_list("pk", "name"))
    return [names[pk] for pk in model_ids if pk in names]


def prompts_document(batch: Batch) -> dict:
    return {"templates": {**DEFAULT_TEMPLATES, **(batch.prompt_templates or {})},
            "changed_from_default": sorted(batch.prompt_templates or {})}


# --- the files --------------------------------------------------------------------------------------------------

@dataclass
class _File:
    path: str
    description: str
    content: bytes | None = None
    lines: Iterable[bytes] | None = None


def _table_files(batch: Batch, name: str, stem: str, what: str) -> Iterator[_File]:
    for fmt in TABLE_FORMATS:
        yield _File(f"tables/{stem}.{fmt}", f"{what} ({fmt})", exports.build_export(batch, name, fmt).read())


def _fire_rating_files(batch: Batch, skipped: dict[str, str]) -> Iterator[_File]:
    """Each table built once and rendered in every format: bootstrap CIs and alpha are the slow part, and the
    exports' fixed seed makes each file the same as its single download."""
    missing: dict[str, list[str]] = {}  # why -> what is missing (no ratings yet: every table, for one reason)
    why_no_ratings = ""
    for name, stem, what in FIRE_RATING_TABLES:
        try:
            table = exports.fire_rating_table(batch, name)
        except ApplicationError as reason:
            missing.setdefault(reason.message, []).append(f"tables/{stem}.*")
            why_no_ratings = why_no_ratings or reason.message
            continue
        for fmt in TABLE_FORMATS:
            yield _File(f"tables/{stem}.{fmt}", f"{what} ({fmt})", render(table, fmt).encode())
    ratings = fire_ratings_long(batch)
    if ratings.rows:
        yield _File("data/ratings.csv", "Every rating in long format (conversation, turn, annotator, score)",
                    render(ratings, "csv").encode())
    else:  # the rows Table A1 counts, so it has said why
        missing.setdefault(why_no_ratings, []).append("data/ratings.csv")
    for reason, paths in missing.items():
        skipped[", ".join(paths)] = reason


def _files(batch: Batch, skipped: dict[str, str]) -> Iterator[_File]:
    """Every file but README.md, in the order of the README. Anything a batch cannot have is noted in ``skipped``."""
    if batch.kind == Batch.Kind.INTERFEEDBACK:
        for name, stem, what in INTERFEEDBACK_TABLES:
            yield from _table_files(batch, name, stem, what)
    for name, stem, what in RUN_TABLES:
        try:
            files = list(_table_files(batch, name, stem, what))
        except ApplicationError as reason:
            if batch.kind == Batch.Kind.INTERFEEDBACK or name != "bench":
                skipped[f"tables/{stem}.*"] = reason.message
            continue
        yield from files
    if batch.kind == Batch.Kind.FIRE:
        yield from _fire_rating_files(batch, skipped)
    if batch.kind == Batch.Kind.PREFERENCE:  # its report sits above the export jobs (pyproject's layers)
        skipped["tables/preference_*"] = ("the preference tables are downloaded from the batch's preference report "
                                          f"(/research/batches/{batch.id}/preferences/)")
    if batch.kind == Batch.Kind.INTERFEEDBACK:
        for name, stem, what in FIGURES:
            for fmt in FIGURE_FORMATS:
                try:
                    content = exports.build_export(batch, name, fmt).read()
                except ApplicationError as reason:
                    skipped[f"figures/{stem}.*"] = reason.message
                    break
                yield _File(f"figures/{stem}.{fmt}", f"{what} ({fmt})", content)
        for fmt, path, what in (("jsonl", "data/sessions.jsonl", "One JSON line per completed session with every "
                                 "round (feedback, answer, verdict, timings); annotators by pseudonym"),
                                ("fire", "data/sessions.fire.jsonl", "The same sessions as FIRE conversations "
                                 "(student = model, teacher = human)")):
            yield _File(path, what, lines=exports.build_export(batch, "sessions", fmt).stream)
    yield from _table_files(batch, "costs", "costs", "Tokens and cost per model (the servers' usage, the models' "
                            "prices) and the batch's budget")
    yield _File("instructions.md", "The instructions annotators saw at the top of every item (Markdown)",
                ((batch.instructions or "_No instructions were set for this batch._").strip() + "\n").encode())
    yield _File("settings/prompts.json", "Prompt templates used for the models (defaults with the batch's changes)",
                _json(prompts_document(batch)))
    yield _File("settings/models.json", "The batch's settings and its models' settings (backend, generation); "
                "names of API-key environment variables only, never keys", _json(models_document(batch)))


def _json(document) -> bytes:
    return (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode()


def _readme(batch: Batch, described: list[tuple[str, str]], skipped: dict[str, str], sessions: int) -> bytes:
    lines = [f"# Study bundle: {batch.name}", "",
             f"{batch.get_kind_display()} batch, {batch.task_count:,} tasks, {sessions:,} completed sessions "
             "exported. Tables and figures cover every counted session (no filters); percentages have one decimal, "
             "rounded half up; Average is pooled over sessions.", ""]
    if batch.category_order:
        lines += ["Category order: " + ", ".join(batch.category_order) + ".", ""]
    lines += ["| file | what |", "|---|---|", "| README.md | This file |"]
    lines += [f"| {path} | {what.replace('|', '/')} |" for path, what in described]
    if skipped:
        lines += ["", "## Not included", ""]
        lines += [f"- {path}: {reason}" for path, reason in skipped.items()]
    return ("\n".join(lines) + "\n").encode()


def bundle_write(batch: Batch, handle, *, progress: Progress | None = None) -> BundleSummary:
    """Write the bundle as a zip into the open binary file ``handle``."""
    started = time.perf_counter()
    skipped: dict[str, str] = {}
    described: list[tuple[str, str]] = []
    sessions = lines_done = 0
    with zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
        for item in _files(batch, skipped):
            if progress:
                progress(f"Writing {item.path}", lines_done)
            if item.lines is None:
                archive.writestr(item.path, item.content or b"")
            else:
                count = 0
                entry = zipfile.ZipInfo(item.path, date_time=time.localtime()[:6])  # as writestr dates its files
                entry.compress_type = zipfile.ZIP_DEFLATED
                with archive.open(entry, "w", force_zip64=True) as out:  # sessions can pass 4 GB
                    for count, line in enumerate(item.lines, 1):
                        out.write(line)
                        if progress and count % PROGRESS_EVERY == 0:
                            progress(f"Writing {item.path}: {count:,} sessions", lines_done + count)
                sessions, lines_done = max(sessions, count), lines_done + count
            described.append((item.path, item.description))
        archive.writestr("README.md", _readme(batch, described, skipped, sessions))
    return BundleSummary(files=["README.md", *(path for path, _ in described)], skipped=skipped, sessions=sessions,
                         seconds=round(time.perf_counter() - started, 3))
