"""Batch writes: import (validate everything, then one transaction) and settings after import (the export back
to our format: annotate/imports/export.py).

``batch_import`` is what the command, the upload page and the API all end in; the last two reach it through an
import Job row run by a Celery worker (``annotate/imports/jobs.py``).
"""

from __future__ import annotations

import json
import logging
import time
from decimal import Decimal, InvalidOperation
from pathlib import Path

from django.db import IntegrityError, transaction

from annotate.costs import batch_spent
from annotate.crowd.study import study_apply, study_document, study_settings_clean
from annotate.errors import ApplicationError
from annotate.importkit.common import ImportContext, ImportReport, Progress, gc_paused
from annotate.imports.category_order import batch_categories, category_order_clean, category_order_resolve
from annotate.imports.gold_checks import gold_items_check
from annotate.imports.registry import IMPORTERS
from annotate.models import Assignment, Batch, ModelConfig, User
from annotate.queue.capacity import annotator_pool, capacity_planned
from annotate.queue.services import work_items_create_for_batch
from annotate.server.json_limits import DEPTH_MESSAGE, too_deep
from annotate.sessions.prompts import DEFAULT_TEMPLATES

logger = logging.getLogger(__name__)

SETTING_KEYS = ("models", "overlap", "max_rounds", "prompt_templates", "gold_rate", "allow_repeat_tasks",
                "instructions", "researchers", "annotators", "category_order", "budget", "seed",
                "skips_count_toward_share", "max_counted_skips", "reasons_required", "study", "open_to_all_annotators")
MAX_SEED = 2**31 - 1
EVERYONE = ("*", "all")  # "researchers": every researcher (and admin) account; "annotators": no one named
MAX_INSTRUCTIONS_CHARS = 20_000
_TEMPLATE_FIELDS = {"question": "", "options": "", "answer_format": "", "feedback": "", "ground_truth": ""}


# --- settings -----------------------------------------------------------------------------------------------

def _int_setting(value, name: str, low: int, high: int, report: ImportReport) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or isinstance(value, bool) or str(number) != str(value).strip() or not low <= number <= high:
        report.add(None, f"settings.{name}", f"must be a whole number from {low} to {high}, got {value!r}")
        return None
    return number


def batch_settings_clean(raw: dict | None, report: ImportReport) -> dict:
    """Checked batch settings (models become ModelConfig rows); problems go to the report as ``settings.X``."""
    raw = {k: v for k, v in (raw or {}).items() if v is not None}
    clean: dict = {}
    for key in raw.keys() - set(SETTING_KEYS):
        report.add(None, f"settings.{key}", f"unknown setting; known: {', '.join(SETTING_KEYS)}")
    if "models" in raw:
        names = raw["models"].split(",") if isinstance(raw["models"], str) else raw["models"]
        names = [str(n).strip() for n in names if str(n).strip()]
        found = {m.name: m for m in ModelConfig.objects.filter(name__in=names)}
        unknown = [n for n in names if n not in found]
        if unknown:
            known = ", ".join(ModelConfig.objects.order_by("name").values_list("name", flat=True)[:20]) or "none"
            report.add(None, "settings.models", f"unknown model(s) {', '.join(map(repr, unknown))}; known: {known}")
        clean["models"] = [found[n] for n in dict.fromkeys(names) if n in found]
    if "overlap" in raw:
        clean["overlap"] = _int_setting(raw["overlap"], "overlap", 1, 100, report)
    if "max_rounds" in raw:
        clean["max_rounds"] = _int_setting(raw["max_rounds"], "max_rounds", 1, 10, report)
    if "gold_rate" in raw:
        try:
            rate = float(raw["gold_rate"])
            assert 0.0 <= rate <= 1.0
            clean["gold_rate"] = rate
        except (TypeError, ValueError, AssertionError):
            report.add(None, "settings.gold_rate", f"must be a number from 0 to 1, got {raw['gold_rate']!r}")
    if "prompt_templates" in raw:
        clean["prompt_templates"] = _templates_clean(raw["prompt_templates"], report)
    for flag in ("allow_repeat_tasks", "skips_count_toward_share", "reasons_required", "open_to_all_annotators"):
        if flag in raw:
            if isinstance(raw[flag], bool):
                clean[flag] = raw[flag]
            else:
                report.add(None, f"settings.{flag}", f"must be true or false, got {raw[flag]!r}")
    if "seed" in raw:
        clean["seed"] = _int_setting(raw["seed"], "seed", 0, MAX_SEED, report)
    if "max_counted_skips" in raw:
        clean["max_counted_skips"] = _int_setting(raw["max_counted_skips"], "max_counted_skips", 0, 1000, report)
    if "researchers" in raw:
        clean["researchers"] = _researchers_clean(raw["researchers"], report)
    if "annotators" in raw:
        clean["annotators"] = _annotators_clean(raw["annotators"], report)
    if "instructions" in raw:
        text = raw["instructions"]
        if not isinstance(text, str):
            report.add(None, "settings.instructions", "expected Markdown text")
        elif len(text) > MAX_INSTRUCTIONS_CHARS:
            report.add(None, "settings.instructions",
                       f"{len(text):,} characters; at most {MAX_INSTRUCTIONS_CHARS:,}")
        else:
            clean["instructions"] = text.strip()
    if "category_order" in raw:
        clean["category_order"] = category_order_clean(raw["category_order"], report)
    if "budget" in raw:
        clean["budget"] = _budget_clean(raw["budget"], report)
    if "study" in raw:  # what invited participants are asked besides the items (annotate.crowd.study)
        clean["study"], problems = study_settings_clean(raw["study"], name="settings.study")
        for field, message in problems:
            report.add(None, field, message)
    return {k: v for k, v in clean.items() if v is not None}


def _budget_clean(value, report: ImportReport) -> Decimal | None:
    try:
        budget = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        budget = None
    if budget is None or not budget.is_finite() or not 0 <= budget <= Decimal("9999999999.99"):
        report.add(None, "settings.budget", f"must be an amount of 0 or more (the models' currency), got {value!r}")
        return None
    return budget.quantize(Decimal("0.01"))


def _researchers_clean(value, report: ImportReport) -> list[User] | None:
    """Usernames (a list or "a,b"), or "*"/"all" for every researcher: who may read the batch at once."""
    names = _usernames(value, "researchers", report)
    if names is None:
        return None
    readers = User.objects.filter(role__in=[User.Role.RESEARCHER, User.Role.ADMIN], is_active=True)
    if any(n.lower() in EVERYONE for n in names):
        return list(readers.filter(role=User.Role.RESEARCHER))
    found = {u.username: u for u in readers.filter(username__in=names)}
    missing = [n for n in names if n not in found]
    if missing:
        report.add(None, "settings.researchers", f"no active researcher or admin named {', '.join(map(repr, missing))}")
        return None
    return [found[n] for n in names]


def _usernames(value, key: str, report: ImportReport) -> list[str] | None:
    names = [n.strip() for n in value.split(",")] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        report.add(None, f"settings.{key}", f"expected usernames (a,b) or * for every {key[:-1]}")
        return None
    return [n for n in dict.fromkeys(n.strip() for n in names) if n]


def _annotators_clean(value, report: ImportReport) -> list[User] | None:
    """Usernames (a list or "a,b"): only they are served the batch; "*"/"all": everyone with the annotator role
    (an empty list is the same). Returned as the list to serve, [] for everyone."""
    names = _usernames(value, "annotators", report)
    if names is None:
        return None
    if any(n.lower() in EVERYONE for n in names):
        return []
    found = {u.username: u for u in User.objects.filter(role=User.Role.ANNOTATOR, is_active=True,
                                                        username__in=names)}
    missing = [n for n in names if n not in found]
    if missing:
        report.add(None, "settings.annotators", f"no active annotator named {', '.join(map(repr, missing))}")
        return None
    return [found[n] for n in names]


def _templates_clean(value, report: ImportReport) -> dict | None:
    if isinstance(value, str):
        if too_deep(value):  # before json recurses into it
            report.add(None, "settings.prompt_templates", f"invalid JSON: {DEPTH_MESSAGE}")
            return None
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as error:
            report.add(None, "settings.prompt_templates", f"invalid JSON: {error.msg}")
            return None
    if not isinstance(value, dict):
        report.add(None, "settings.prompt_templates", "expected an object of template name -> text")
        return None
    ok = True
    for key, text in value.items():
        if key not in DEFAULT_TEMPLATES:
            report.add(None, f"settings.prompt_templates.{key}",
                       f"unknown template; known: {', '.join(DEFAULT_TEMPLATES)}")
            ok = False
        elif not isinstance(text, str):
            report.add(None, f"settings.prompt_templates.{key}", "expected text")
            ok = False
        else:
            try:
                text.format(**_TEMPLATE_FIELDS)
            except (KeyError, IndexError, ValueError) as error:
                report.add(None, f"settings.prompt_templates.{key}", f"bad placeholder {error}; allowed: "
                           + ", ".join("{" + f + "}" for f in _TEMPLATE_FIELDS))
                ok = False
    return value if ok else None


def _settings_apply(batch: Batch, clean: dict) -> bool:
    """Set the given settings on a locked batch; True when something changed."""
    changed = False
    for key, field in (("overlap", "overlap"), ("max_rounds", "max_rounds"), ("gold_rate", "gold_rate"),
                       ("prompt_templates", "prompt_templates"), ("allow_repeat_tasks", "allow_repeat_tasks"),
                       ("instructions", "instructions"), ("category_order", "category_order"), ("budget", "budget"),
                       ("seed", "serving_seed"), ("skips_count_toward_share", "skips_count_toward_share"),
                       ("max_counted_skips", "max_counted_skips"), ("reasons_required", "reasons_required"),
                       ("open_to_all_annotators", "open_to_all_annotators")):
        if key in clean and getattr(batch, field) != clean[key]:
            setattr(batch, field, clean[key])
            changed = True
    if "budget" in clean and batch.pk is not None:  # a raised budget opens the batch again, a lowered one closes it
        batch.budget_reached = batch_spent(batch) >= clean["budget"]
    if "researchers" in clean:  # added to the batch's readers (never removes one: that is the admin's call)
        known = set(batch.members.values_list("pk", flat=True))
        new = [u for u in clean["researchers"] if u.pk not in known]
        if new:
            batch.members.add(*new)
            changed = True
    if "annotators" in clean:  # the named annotators replace the previous ones; none named: everyone
        wanted = {u.pk for u in clean["annotators"]}
        if set(batch.annotators.values_list("pk", flat=True)) != wanted:
            batch.annotators.set(clean["annotators"])
            changed = True
        if batch.annotators_named != bool(wanted):
            batch.annotators_named = bool(wanted)
            changed = True
    if "models" in clean:
        wanted = {m.pk for m in clean["models"]}
        if set(batch.models_to_evaluate.values_list("pk", flat=True)) != wanted:
            batch.models_to_evaluate.set(clean["models"])
            changed = True
    if clean.get("study"):
        before = study_document(batch)
        changed = before != study_document(batch, study_apply(batch=batch, clean=clean["study"])) or changed
    return changed


def batch_settings_apply(*, batch: Batch, settings: dict) -> Batch:
    """Change a batch's settings after import (models, overlap K, rounds, templates, gold rate)."""
    report = ImportReport(kind="settings", batch=batch.name)
    clean = batch_settings_clean(settings, report)
    if "category_order" in clean:
        clean["category_order"] = category_order_resolve(given=clean["category_order"], previous=batch.category_order,
                                                         present=batch_categories(batch), report=report)
    _seed_check(clean, batch, report)
    if not report.ok:
        raise ApplicationError("; ".join(str(p) for p in report.problems),
                               extra={"problems": [p.as_dict() for p in report.problems]})
    with transaction.atomic():
        batch = Batch.objects.select_for_update().get(pk=batch.pk)
        if _settings_apply(batch, clean):
            batch.save()
        if batch.kind == Batch.Kind.INTERFEEDBACK:
            work_items_create_for_batch(batch=batch)
    return batch


# --- import -------------------------------------------------------------------------------------------------

def batch_import(*, path, name: str, kind: str, dry_run: bool = False, update: bool = False,
                 settings: dict | None = None, progress: Progress | None = None, created_by: User | None = None,
                 options: dict | None = None) -> ImportReport:
    """Validate the whole file, then write it in one transaction (or nothing). Never half-imports.

    Re-importing the same content is a no-op reported as "unchanged"; changed content for an existing id is a
    problem unless ``update``. ``options`` are importer-specific (``map`` for rows, ``images_dir``).
    """
    # The collector stays off until the import's records are gone: turned back on while they live, it walks all of
    # them three times over (a quarter of the import's CPU on 100k tasks).
    with gc_paused():
        return _batch_import(path=path, name=name, kind=kind, dry_run=dry_run, update=update, settings=settings,
                             progress=progress, created_by=created_by, options=options)


def _batch_import(*, path, name: str, kind: str, dry_run: bool, update: bool, settings: dict | None,
                  progress: Progress | None, created_by: User | None, options: dict | None) -> ImportReport:
    importer = IMPORTERS.get(kind)
    if importer is None:
        raise ApplicationError(f"Unknown import kind {kind!r}; choose one of {', '.join(sorted(IMPORTERS))}.")
    name = (name or "").strip()
    report = ImportReport(kind=kind, batch=name, dry_run=dry_run)
    start = time.perf_counter()
    if not name or len(name) > 128:
        report.add(None, "name", "a batch name of 1 to 128 characters is required")
    existing = Batch.objects.filter(name=name).first() if name else None
    if existing is not None and existing.kind != importer.batch_kind:
        report.add(None, "kind", f"batch {name!r} exists as a {existing.kind} batch; cannot import {kind} into it")
        existing = None
    clean = batch_settings_clean(settings, report)
    max_rounds = clean.get("max_rounds") or (existing.max_rounds if existing else 3)
    options = dict(options or {})
    if "overlap" in clean:
        options.setdefault("overlap", clean["overlap"])  # importers with their own default (FIRE: 3 raters)
    ctx = ImportContext(path=Path(path), report=report, batch=existing, update=update, max_rounds=max_rounds,
                        options=options, progress=progress)
    with gc_paused():
        plan = importer.validate(ctx)
    if plan is not None:
        _recorded_answers_check(getattr(plan, "records", None) or getattr(plan, "conversations", ()), clean,
                                existing, report)
        _category_order_plan(importer, plan, clean, existing, report)
        _seed_check(clean, existing, report)
        if importer.batch_kind == Batch.Kind.INTERFEEDBACK:
            gold_items_check(getattr(plan, "records", ()), clean, existing, report)
    if plan is None and report.ok:
        report.add(None, None, "the file could not be read")
    if not report.ok:
        report.status = "invalid"
    else:
        _capacity_report(importer.batch_kind, clean, existing, report)
        if dry_run:
            report.status = "dry_run"
        else:
            if progress is not None:
                progress("write", 0, 0)  # announced before the transaction, while others can still see it
            with report.timed("write"), gc_paused():
                _write(importer, plan, ctx, clean, name, existing, created_by)
    report.timings["total"] = round(time.perf_counter() - start, 3)
    return report


def _seed_check(clean: dict, batch: Batch | None, report: ImportReport) -> None:
    """A batch keeps the serving seed its items were first served by: a study re-run from it is served alike."""
    if "seed" in clean and batch is not None and batch.serving_seed != clean["seed"] and Assignment.objects.filter(
            work_item__batch=batch).exists():
        report.add(None, "settings.seed", f"batch {batch.name!r} has served items in the order of seed "
                   f"{batch.serving_seed}; it keeps that seed (a new seed is for a new batch)")


def _capacity_report(kind: str, clean: dict, existing: Batch | None, report: ImportReport) -> None:
    """Whether the people who may work on the batch can finish it (dry runs too): each task needs models x overlap
    different people. Short of them, a warning says how many more are needed."""
    def setting(key: str, field: str, default):
        return clean[key] if key in clean else getattr(existing, field) if existing is not None else default

    if "models" in clean:
        models = len(clean["models"])
    else:
        models = existing.models_to_evaluate.count() if existing is not None else 0
    named = clean.get("annotators")  # [] opens the batch to everyone
    capacity = capacity_planned(
        kind=kind, models=models, overlap=setting("overlap", "overlap", Batch._meta.get_field("overlap").default),
        repeats=setting("allow_repeat_tasks", "allow_repeat_tasks", False),
        annotators=annotator_pool(existing, named=named,
                                  open_to_all=clean.get("open_to_all_annotators")).count())
    if capacity is None:
        return
    report.capacity = capacity.as_dict()
    if capacity.short:
        report.warn(capacity.sentence())


def _category_order_plan(importer, plan, clean: dict, existing: Batch | None, report: ImportReport) -> None:
    """InterFeedback batches store their category order: the one given, else the batch's own, then the categories
    left out as they first appear (the batch's tasks first, then the file's)."""
    if importer.batch_kind != Batch.Kind.INTERFEEDBACK:
        if "category_order" in clean:
            report.add(None, "settings.category_order", "only InterFeedback batches have a category order")
            del clean["category_order"]
        return
    present = batch_categories(existing) + [record.category for record in getattr(plan, "records", ())]
    order = category_order_resolve(given=clean.get("category_order"),
                                   previous=existing.category_order if existing else [], present=present,
                                   report=report)
    if order is not None:
        clean["category_order"] = order
    else:
        clean.pop("category_order", None)


def _recorded_answers_check(records, clean: dict, existing: Batch | None, report: ImportReport) -> None:
    """A ``recorded_answers`` key must name a model of the batch (the models given, else the batch's own), or the
    recorded answers would silently never be replayed. With no models known yet, unknown names are a warning."""
    if "models" in clean:
        names, whose = {m.name for m in clean["models"]}, "the models given for this batch"
    elif existing is not None and existing.models_to_evaluate.exists():
        names, whose = set(existing.models_to_evaluate.values_list("name", flat=True)), f"batch {existing.name!r}'s models"
    else:
        names, whose = None, ""
    unknown_anywhere: set[str] = set()
    for record in records:
        for key in record.recorded_answers or {}:
            # "<model>:feedback": a bench provider's recorded feedback; "<teacher>@<student>": a FIRE teacher's
            # feedback to that student
            for model in key.split(":")[0].split("@"):
                if names is None:
                    unknown_anywhere.add(model)
                elif model not in names:
                    report.add(record.line, f"recorded_answers.{key}",
                               f"names no model of the batch; {whose}: {', '.join(sorted(names)) or 'none'}")
                    break
    if unknown_anywhere:
        known = set(ModelConfig.objects.filter(name__in=unknown_anywhere).values_list("name", flat=True))
        if unknown_anywhere - known:
            report.warn("recorded_answers name models that do not exist yet: "
                        + ", ".join(sorted(unknown_anywhere - known)) + " (they are replayed only by a model of "
                        "that name added to the batch)")


def _write(importer, plan, ctx: ImportContext, clean: dict, name: str, existing: Batch | None,
           created_by: User | None) -> None:
    report = ctx.report
    changes = importer.has_changes(plan)
    try:
        with transaction.atomic():
            if existing is None:
                batch = Batch.objects.create(name=name, kind=importer.batch_kind, status=Batch.Status.IMPORTING,
                                             created_by=created_by)
            else:
                batch = Batch.objects.select_for_update().get(pk=existing.pk)
            settings_changed = _settings_apply(batch, clean)
            if not changes and not settings_changed and existing is not None:
                report.status = "unchanged"
                return
            if settings_changed and existing is not None:
                report.counts["settings_updated"] = 1
            if changes:
                importer.write(plan, ctx, batch)
            batch.task_count = importer.record_count(batch)
            batch.status = Batch.Status.READY
            report.status = "imported" if changes or existing is None else "unchanged"
            batch.import_report = report.as_dict()
            batch.save()
            if batch.kind == Batch.Kind.INTERFEEDBACK and batch.models_to_evaluate.exists():
                report.counts["work_items_new"] = work_items_create_for_batch(batch=batch)
    except IntegrityError as error:
        logger.warning("import into %s hit a conflict: %s", name, error)
        report.add(None, None, f"another import changed batch {name!r} at the same time; nothing was written — "
                   "run the import again")
        report.status = "invalid"


def import_fire(
    path: Path | str,
    *,
    name: str,
    images: Path | str | None = None,
    overlap: int | None = None,
    dry_run: bool = False,
    update: bool = False,
    created_by: User | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Validate a FIRE file, then (unless dry_run or invalid) write it as batch ``name`` in one transaction.

    A shortcut to the shared runner (``batch_import`` with kind "fire") for the shell and tests.
    """
    return batch_import(
        path=path, name=name, kind="fire", dry_run=dry_run, update=update, created_by=created_by, progress=progress,
        settings={"overlap": overlap} if overlap is not None else None,
        options={"images": str(images)} if images else None,
    )
