"""The study bundle: one zip with everything a paper's appendix needs from a batch.

Every table (csv, md, tex, json), every figure (png, svg), the sessions and ratings exports, the instructions the
annotators saw, the prompt templates and the models' settings (names of API-key variables, never keys), and a
README.md saying what each file is. Built from the same functions as the single exports (evaluation.exports.registry),
so a table in the bundle is byte for byte the table downloaded alone. Which tables, figures and data a batch's
bundle holds is its kind's (evaluation.kinds: `StudyKind.bundle_files`, made of the helpers below); the costs,
the instructions and the settings are in every bundle.

The page and the API build it as an export job (evaluation/exports/jobs.py, a worker writes the zip with
progress); the ``export_bundle`` command writes it directly.
"""

from __future__ import annotations

import json
import re
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO
from urllib.parse import urlsplit, urlunsplit

from annotate.errors import ApplicationError
from annotate.modelconfigs.validation import looks_like_a_key
from annotate.models import Batch, ModelConfig
from annotate.server.version import VERSION
from annotate.sessions.prompts import DEFAULT_TEMPLATES
from evaluation.exports import registry as exports
from evaluation.kinds import kind_of
from evaluation.models import OutcomeCounter

TABLE_FORMATS = ("csv", "md", "tex", "json")
FIGURE_FORMATS = ("png", "svg")
# (export name, file stem, what it is): the tables of the latest runs (evaluation.bench), which kinds put in their
# bundles with `run_table_files`.
RUN_TABLES = (
    ("bench", "bench_tables_1_2", "InterFeedback-Bench Tables 1/2 (latest benchmark run)"),
    ("fire-fixed", "fire_tables_2_3", "FIRE Tables 2 and 3 (latest fixed-dialogue run)"),
    ("fire-free", "fire_tables_4_5", "FIRE Tables 4 and 5 (latest free-dialogue run)"),
)
PROGRESS_EVERY = 1000  # session lines between two progress reports
# Words of a setting's name that make its value a secret however it looks (its *_env sibling holds a variable's
# name and stays). Whole words: "max_new_tokens" and "tokens_per_minute" are settings, "access_token" a secret.
_SECRET_WORDS = frozenset({"key", "apikey", "secret", "token", "password", "passwd", "authorization", "auth",
                           "credential", "credentials", "bearer", "cookie"})
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
REMOVED = "<removed: secret>"

# (what is being written, session lines written so far: two per session, one in each sessions file)
Progress = Callable[[str, int], None]
# A JSON value as a JSONField holds it (a model's backend and generation settings).
JSONValue = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]


@dataclass
class BundleSummary:
    files: list[str]
    skipped: dict[str, str]  # what is missing from the bundle -> why
    sessions: int
    seconds: float


def bundle_filename(batch: Batch) -> str:
    return exports.export_filename(batch, "study-bundle", "zip")


# --- settings without secrets ---------------------------------------------------------------------------------

def _secret_name(key: str) -> bool:
    """A name that says its value is secret: api_key, client_secret, accessToken, Authorization, ..."""
    return not key.lower().endswith("_env") and any(w.lower() in _SECRET_WORDS for w in _WORD.findall(key))


def _redact_url(value: str) -> str:
    """A server's address stays (it says where the model ran); its password and secret query values do not."""
    parts = urlsplit(value)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", f":{REMOVED}@", 1)
    pairs = []
    for pair in parts.query.split("&") if parts.query else []:
        name, sep, _ = pair.partition("=")
        pairs.append(f"{name}={REMOVED}" if sep and _secret_name(name) else pair)
    return urlunsplit(parts._replace(netloc=netloc, query="&".join(pairs)))


def _redact_value(key: str, value: JSONValue) -> JSONValue:
    if _secret_name(key):
        return value if isinstance(value, dict | list) else REMOVED  # a dict or list: its own keys decide
    if not isinstance(value, str):
        return value
    url = urlsplit(value)
    if url.scheme in ("http", "https", "ws", "wss") and url.netloc:
        return _redact_url(value)
    return REMOVED if looks_like_a_key(value) else value  # a key pasted anywhere, a *_env name's place included


def redact(settings: JSONValue) -> JSONValue:
    """The settings with only secrets replaced by a marker: keys, tokens, passwords, credentials (by their
    setting's name, or a value that looks like a key). Every other setting, generation settings and names of
    environment variables included, stays as the run used it."""
    if isinstance(settings, dict):
        return {key: redact(_redact_value(str(key), value)) if isinstance(value, dict | list)
                else _redact_value(str(key), value) for key, value in settings.items()}
    if isinstance(settings, list):
        return [redact(item) if isinstance(item, dict | list) else _redact_value("", item) for item in settings]
    return settings


def models_document(batch: Batch) -> dict[str, object]:
    models = list(batch.models_to_evaluate.order_by("name")) or list(
        ModelConfig.objects.filter(pk__in=OutcomeCounter.objects.filter(batch=batch).values("model_config_id"))
        .order_by("name"))  # no models set (a bench or replayed batch): the models its counted sessions ran
    return {
        "batch": {"name": batch.name, "kind": batch.kind, "overlap": batch.overlap, "max_rounds": batch.max_rounds,
                  "gold_rate": batch.gold_rate, "allow_repeat_tasks": batch.allow_repeat_tasks,
                  "category_order": batch.category_order, "task_count": batch.task_count,
                  # the serving order (balanced, seeded): re-run a study in the same order from these
                  "serving_seed": batch.serving_seed,
                  "serving_models": _model_names(batch.serving_models),
                  "items_per_participant": batch.items_per_participant,
                  "skips_count_toward_share": batch.skips_count_toward_share,
                  "max_counted_skips": batch.max_counted_skips},
        "models": [{"name": m.name, "display_name": m.label, "backend": m.backend,
                    "backend_settings": redact(m.backend_settings), "generation": redact(m.generation),
                    "queue": m.queue_name} for m in models],
        "note": "API keys are never stored or exported: api_key_env names the environment variable that holds one.",
        "feedback_lab_version": VERSION,
    }


def _model_names(model_ids: list[int]) -> list[str]:
    names = dict(ModelConfig.objects.filter(pk__in=model_ids).values_list("pk", "name"))
    return [names[pk] for pk in model_ids if pk in names]


def prompts_document(batch: Batch) -> dict[str, object]:
    return {"templates": {**DEFAULT_TEMPLATES, **(batch.prompt_templates or {})},
            "changed_from_default": sorted(batch.prompt_templates or {})}


# --- the files --------------------------------------------------------------------------------------------------

@dataclass
class BundleFile:
    path: str
    description: str
    content: bytes | None = None
    lines: Iterable[bytes] | None = None


def table_files(batch: Batch, name: str, stem: str, what: str) -> Iterator[BundleFile]:
    for fmt in TABLE_FORMATS:
        yield BundleFile(f"tables/{stem}.{fmt}", f"{what} ({fmt})", exports.build_export(batch, name, fmt).read())


def run_table_files(batch: Batch, skipped: dict[str, str], *, noted: tuple[str, ...]) -> Iterator[BundleFile]:
    """The tables of the batch's latest runs; a run table in ``noted`` that the batch has not says why in the
    README, the others are left out silently."""
    for name, stem, what in RUN_TABLES:
        try:
            files = list(table_files(batch, name, stem, what))
        except ApplicationError as reason:
            if name in noted:
                skipped[f"tables/{stem}.*"] = reason.message
            continue
        yield from files


# Files any batch may have whatever its kind (e.g. its crowd participants), registered by the packages that make
# them: ``files(batch, skipped)``, yielding nothing when the batch has none.
EVERY_BATCH_FILES: list[Callable[[Batch, dict[str, str]], Iterator[BundleFile]]] = []


def register_bundle_files(files: Callable[[Batch, dict[str, str]], Iterator[BundleFile]]) -> None:
    if files not in EVERY_BATCH_FILES:
        EVERY_BATCH_FILES.append(files)


def _files(batch: Batch, skipped: dict[str, str]) -> Iterator[BundleFile]:
    """Every file but README.md, in the order of the README: the kind's, then those of every batch. Anything a
    batch cannot have is noted in ``skipped``."""
    yield from kind_of(batch).bundle_files(batch, skipped)
    for files in EVERY_BATCH_FILES:
        yield from files(batch, skipped)
    yield from table_files(batch, "costs", "costs", "Tokens and cost per model (the servers' usage, the models' "
                            "prices) and the batch's budget")
    yield BundleFile("instructions.md", "The instructions annotators saw at the top of every item (Markdown)",
                ((batch.instructions or "_No instructions were set for this batch._").strip() + "\n").encode())
    yield BundleFile("settings/prompts.json", "Prompt templates used for the models (defaults with the batch's changes)",
                json_bytes(prompts_document(batch)))
    yield BundleFile("settings/models.json", "The batch's settings and its models' settings (backend, generation); "
                "names of API-key environment variables only, never keys", json_bytes(models_document(batch)))


def json_bytes(document: object) -> bytes:
    return (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode()


def _folded(described: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Files of one folder described alike (a study's images) on one line: "data/images/ (12 files)"."""
    groups: list[tuple[str, str, list[str]]] = []  # (folder, what, paths)
    for path, what in described:
        folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
        if groups and groups[-1][:2] == (folder, what):
            groups[-1][2].append(path)
        else:
            groups.append((folder, what, [path]))
    return [(paths[0] if len(paths) == 1 else f"{folder} ({len(paths)} files)", what) for folder, what, paths in groups]


def _readme(batch: Batch, described: list[tuple[str, str]], skipped: dict[str, str], sessions: int) -> bytes:
    lines = [f"# Study bundle: {batch.name}", "", kind_of(batch).bundle_summary(batch, sessions), "",
             f"Made by Feedback Lab {VERSION} (cite this version with the data).", ""]
    if batch.category_order:
        lines += ["Category order: " + ", ".join(batch.category_order) + ".", ""]
    lines += ["| file | what |", "|---|---|", "| README.md | This file |"]
    lines += [f"| {path} | {what.replace('|', '/')} |" for path, what in _folded(described)]
    if skipped:
        lines += ["", "## Not included", ""]
        lines += [f"- {path}: {reason}" for path, reason in skipped.items()]
    return ("\n".join(lines) + "\n").encode()


def bundle_write(batch: Batch, handle: IO[bytes], *, progress: Progress | None = None) -> BundleSummary:
    """Write the bundle as a zip into the open binary file ``handle``."""
    started = time.perf_counter()
    skipped: dict[str, str] = {}
    described: list[tuple[str, str]] = []
    sessions = lines_done = 0
    with zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.comment = f"Feedback Lab {VERSION}".encode()  # `unzip -z` shows it without opening a file
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
