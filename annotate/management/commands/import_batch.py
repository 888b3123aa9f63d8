"""python manage.py import_batch PATH --name NAME [--kind interfeedback|fire|rows] [--dry-run] [--update] ...

Validates the whole file first and prints every problem as ``line N, field F: ...``; writes in one transaction.
Exits non-zero when anything is wrong (nothing is written then).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotate.errors import ApplicationError
from annotate.imports.batches import batch_import
from annotate.imports.registry import IMPORTERS

_ROWS_SUFFIXES = {".csv", ".tsv", ".parquet"}


class _Bars:
    """One tqdm bar per phase (read, images, write) on stderr."""

    def __init__(self, enabled: bool):
        self.enabled, self.phase, self.bar = enabled, None, None

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if phase != self.phase:
            self.close()
            self.phase = phase
            self.bar = tqdm(total=total, desc=phase, unit="item", file=sys.stderr, leave=False)
        self.bar.total = total
        self.bar.n = done
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class Command(BaseCommand):
    help = "Import a batch (InterFeedback JSONL/zip, FIRE JSON, or benchmark rows), validating everything first."

    def add_arguments(self, parser):
        parser.add_argument("path", help="the file: .jsonl, .zip, .json (FIRE), .csv or .parquet (rows)")
        parser.add_argument("--name", required=True, help="batch name (re-importing into it is idempotent)")
        parser.add_argument("--kind", choices=sorted(IMPORTERS), help="format (default: rows for .csv/.parquet, "
                            "else interfeedback)")
        parser.add_argument("--models", help="comma-separated ModelConfig names to evaluate")
        parser.add_argument("--overlap", help="annotators per item (K)")
        parser.add_argument("--max-rounds", help="feedback rounds (default 3)")
        parser.add_argument("--gold-rate", help="share of gold/attention items, 0..1")
        parser.add_argument("--allow-repeat-tasks", action="store_true", default=None,
                            help="serve a task again to an annotator with another model while they have not seen "
                                 "its answer (default: each annotator gets each task once)")
        parser.add_argument("--reasons-optional", dest="reasons_required", action="store_const", const=False,
                            default=None, help="preference batches: a final save needs no reason per candidate "
                                               "(default: a reason for every candidate is required)")
        parser.add_argument("--templates", help="JSON file of prompt templates")
        parser.add_argument("--instructions", help="Markdown file shown to annotators at the top of every item")
        parser.add_argument("--researchers", help="usernames who may read the batch (a,b), or '*' for every researcher")
        parser.add_argument("--annotators", help="usernames served the batch (a,b); '*': everyone with the annotator "
                            "role who belongs to no other open batch (the default for a new batch)")
        parser.add_argument("--open-to-all-annotators", action="store_true", default=None,
                            help="serve the batch to every annotator, also the people named on other batches")
        parser.add_argument("--category-order", help="category names in the order of the report's columns "
                            "(\"Visual Logic,MMMU-Pro,...\"); the rest follow as they first appear in the file")
        parser.add_argument("--budget", help="model spending limit (the models' prices); then no new session starts")
        parser.add_argument("--seed", help="seed of the serving order (tasks, models per task, each annotator's turn "
                            "of models); give the same seed to serve a study again in the same order")
        parser.add_argument("--skips-count-toward-share", action="store_true", default=None,
                            help="invited participants' skipped items count toward their share (at most "
                                 "--max-counted-skips of them)")
        parser.add_argument("--max-counted-skips", help="with --skips-count-toward-share: how many skips count at "
                            "most (default 1)")
        parser.add_argument("--study", help="JSON file of the study's settings for invited participants (consent, "
                            "screening, attention checks, questionnaires, time limit, bonus rule)")
        parser.add_argument("--map", dest="mapping", help="rows: field=column,... e.g. question=question,id=qid")
        parser.add_argument("--images", help="a directory (or, for FIRE, a zip) holding the images")
        parser.add_argument("--category", help="rows: category for every task when the file has none")
        parser.add_argument("--dry-run", action="store_true", help="validate and report; write nothing")
        parser.add_argument("--update", action="store_true", help="replace tasks whose content changed")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, **opts):
        path = Path(opts["path"])
        kind = opts["kind"] or ("rows" if path.suffix.lower() in _ROWS_SUFFIXES else "interfeedback")
        settings = {"models": opts["models"], "overlap": opts["overlap"], "max_rounds": opts["max_rounds"],
                    "gold_rate": opts["gold_rate"], "allow_repeat_tasks": opts["allow_repeat_tasks"],
                    "researchers": opts["researchers"], "annotators": opts["annotators"], "category_order": opts["category_order"],
                    "budget": opts["budget"], "seed": opts["seed"],
                    "skips_count_toward_share": opts["skips_count_toward_share"],
                    "max_counted_skips": opts["max_counted_skips"], "reasons_required": opts["reasons_required"],
                    "open_to_all_annotators": opts["open_to_all_annotators"]}
        if opts["templates"]:
            try:
                settings["prompt_templates"] = Path(opts["templates"]).read_text(encoding="utf-8")
            except OSError as error:
                raise CommandError(f"--templates: {error}") from None
        if opts["instructions"]:
            try:
                settings["instructions"] = Path(opts["instructions"]).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise CommandError(f"--instructions: {error}") from None
        if opts["study"]:
            try:
                settings["study"] = json.loads(Path(opts["study"]).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError) as error:
                raise CommandError(f"--study: {error}") from None
        options = {key: value for key, value in (("map", opts["mapping"]), ("images", opts["images"]),
                                                 ("images_dir", opts["images"]), ("category", opts["category"]))
                   if value}
        bars = _Bars(not opts["no_progress"] and not opts["json"])
        try:
            report = batch_import(path=path, name=opts["name"], kind=kind, dry_run=opts["dry_run"],
                                  update=opts["update"], settings=settings, options=options, progress=bars)
        except ApplicationError as error:
            raise CommandError(error.message) from None
        finally:
            bars.close()
        if opts["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
        else:
            self.stdout.write(report.render())
            if report.timings:
                self.stdout.write("timings: " + ", ".join(f"{k} {v:.2f}s" for k, v in report.timings.items()))
        if not report.ok:
            raise CommandError(f"{report.problem_total} problem(s); nothing was imported.")
