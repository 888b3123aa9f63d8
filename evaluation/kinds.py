"""The registry of batch kinds: what each kind of study adds to its report page and its study bundle.

A kind of study is one package of evaluation/ whose ``registration`` module registers a `StudyKind` here and its
exports in evaluation.exports.registry. `autodiscover` (run by EvaluationConfig.ready) imports every package's
``registration`` module, so the report views and the bundle ask `kind_of(batch)` instead of branching on
``batch.kind``, and a new kind of study needs no change outside its own package.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from annotate.errors import ApplicationError
from annotate.models import Batch

if TYPE_CHECKING:
    from evaluation.exports.bundle import BundleFile

# Files of the study bundle (README order); what a batch cannot have goes in ``skipped`` (path -> why).
BundleFiles = Callable[[Batch, dict[str, str]], Iterator["BundleFile"]]


def _no_sections(batch: Batch) -> dict[str, Any]:
    return {}


def _items_summary(batch: Batch, sessions: int) -> str:
    return f"{batch.get_kind_display()} batch, {batch.task_count:,} items."


def _refuses_nothing(batch: Batch, export: str) -> str | None:
    return None


# The actions a report page can offer, by name, in the order it shows them: "recount" (recount the outcome
# counters), "sessions" (browse sessions), "quality" (annotator quality), "invites", "study" (crowd study settings),
# "participants", "dashboard" (live), "sessions-export" (a background job writing every session).
REPORT_ACTIONS = ("recount", "sessions", "quality", "invites", "study", "participants", "dashboard",
                  "sessions-export")
# What every kind of study has: people join through links, and the batch is watched live.
COMMON_ACTIONS = ("invites", "study", "participants", "dashboard")


@dataclass(frozen=True)
class StudyKind:
    kind: str  # a Batch.Kind value
    downloads: tuple[str, ...]  # the exports its report page offers, in order (names in the exports registry)
    bundle_files: BundleFiles  # its own files of the study bundle, before the files every bundle has
    report_sections: Callable[[Batch], dict[str, Any]] = field(default=_no_sections)  # extra report page context
    counts_sessions: bool = False  # its completed sessions are counted and exported (jobs show their progress)
    # The study bundle README's first paragraph, in the words of this kind of study (sessions: those exported)
    bundle_summary: Callable[[Batch, int], str] = field(default=_items_summary)
    # Why an export of another kind of study means nothing for this batch (a 400 naming its own), else None
    refuses: Callable[[Batch, str], str | None] = field(default=_refuses_nothing)
    # Its own annotator quality page: the template and its context (None: InterFeedback's, from sessions)
    quality: Callable[[Batch], dict[str, Any]] | None = None
    # The actions its report page offers (names from REPORT_ACTIONS): none of another kind's
    report_actions: tuple[str, ...] = COMMON_ACTIONS


KINDS: dict[str, StudyKind] = {}


def register(study: StudyKind) -> None:
    if study.kind in KINDS:
        raise ValueError(f"The batch kind {study.kind!r} is registered twice.")
    KINDS[study.kind] = study


def kind_of(batch: Batch) -> StudyKind:
    try:
        return KINDS[batch.kind]
    except KeyError:
        raise ApplicationError(f"No package of evaluation/ registers batches of kind {batch.kind!r}, so batch "
                               f"{batch.name!r} has no report.", code="unknown_kind") from None


def autodiscover() -> None:
    """Import ``evaluation.<package>.registration`` for every package of evaluation/ that has one."""
    import evaluation

    for package in pkgutil.iter_modules(evaluation.__path__):
        name = f"evaluation.{package.name}.registration"
        if package.ispkg and importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
