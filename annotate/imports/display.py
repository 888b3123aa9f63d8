"""An import's result as people read it: a sentence for its outcome, its counts under human labels (what the file
holds, then what the import did or would do; a failed import did nothing, so it shows no "created"), its
problems with code shown as code (never raw backticks)."""

from __future__ import annotations

import re

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from annotate.models import Job

# What the file holds (read, whatever the outcome).
READ_LABELS = {
    "tasks": _("Tasks in the file"), "images": _("Images in the file"),
    "conversations": _("Conversations in the file"), "turns": _("Turns"), "rateable turns": _("Turns to rate"),
}
# What the import wrote (or, in a dry run, would write).
WRITE_LABELS = {
    "created": _("Tasks created"), "updated": _("Tasks updated"), "unchanged": _("Tasks unchanged"),
    "images_new": _("New images stored"), "work_items_new": _("New work items (task × model)"),
    "new conversations": _("Conversations created"), "updated conversations": _("Conversations updated"),
    "work items": _("Work items"), "settings_updated": _("Settings changed"),
}
# A preference file holds items and their responses, not conversations and turns: the same counts, its own words.
PREFERENCE_LABELS = {
    "conversations": _("Items in the file"), "turns": _("Responses"), "rateable turns": _("Responses to rate"),
    "new conversations": _("Items created"), "updated conversations": _("Items updated"),
}
_CODE = re.compile(r"`([^`]+)`")


def with_code(text: str) -> SafeString:
    """Escaped text whose `code spans` are <code> elements."""
    return mark_safe(_CODE.sub(lambda m: f"<code>{m.group(1)}</code>", escape(text)))


def outcome(job: Job) -> str:
    """One sentence: what came of the import."""
    report = job.report or {}
    status = report.get("status")
    if status == "invalid":
        total = report.get("problem_total", 0)
        return ngettext("%(n)d problem found; nothing was imported.", "%(n)d problems found; nothing was imported.",
                        total) % {"n": total}
    return {
        "dry_run": _("Dry run: the file is valid; nothing was written."),
        "unchanged": _("Unchanged: the batch already holds this content."),
        "imported": _("Imported."),
    }.get(status or "", job.error or job.message or "")


def count_rows(job: Job) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(what the file holds, what the import did) as (label, number) rows; nothing done when it failed."""
    report = job.report or {}
    counts = report.get("counts") or {}
    words = PREFERENCE_LABELS if report.get("kind") == "preference" else {}
    read = [(str(words.get(key, label)), counts[key]) for key, label in READ_LABELS.items() if key in counts]
    if report.get("status") == "invalid":
        return read, []
    done = [(str(words.get(key, label)), counts[key]) for key, label in WRITE_LABELS.items() if key in counts]
    known = READ_LABELS.keys() | WRITE_LABELS.keys()
    done += [(key.replace("_", " "), value) for key, value in counts.items() if key not in known]
    return read, done


def problems(job: Job) -> list[SafeString]:
    return [with_code(p.get("text", "")) for p in (job.report or {}).get("problems", [])]

