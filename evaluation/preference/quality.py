"""Per-rater quality of a preference batch, for researchers (the batch kind's quality page): what each rater took,
finished and skipped, how long an item took them, and the signs of careless rating a preference study looks for.

Definitions (every rater who was served an item of the batch, by pseudonym; final judgments only):

- *time per item*: from being served the item to its final save (the assignment's ``created_at`` to
  ``finished_at``), median over finished items.
- *blank reasons*: final candidate ratings whose reason is empty; *short reasons*: under ``SHORT_REASON_CHARS``.
- *same scores*: finished items where every candidate got the same three scores (no distinction made).
- *contradictions*: finished items whose ranking puts a candidate above another whose scores are at least as high
  on every dimension and higher on one (``ranking_contradictions``, the rating page's warning).
- *agreement*: the rater's judgments against every other rater's of the same comparison (the agreement table's
  per-rater row) and the mean of the rater's pairwise kappas.
- *flagged*: same scores or contradictions on more than ``FLAG_SHARE`` of at least ``MIN_ITEMS_FOR_FLAG`` items.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from annotate.errors import ApplicationError
from annotate.models import Assignment, Batch
from annotate.rating.preference.services import DIMENSIONS, ranking_contradictions
from evaluation.preference.metrics import name_key, pair_judgments, preference_agreement
from evaluation.preference.selectors import preference_data, rated_items
from evaluation.stats import percent

SHORT_REASON_CHARS = 10
FLAG_SHARE = 0.25
MIN_ITEMS_FOR_FLAG = 4
SKIP_REASONS_SHOWN = 5


@dataclass
class RaterQuality:
    pseudonym: str
    served: int = 0
    finished: int = 0
    skipped: int = 0
    in_progress: int = 0
    skip_reasons: list[tuple[str, int]] = field(default_factory=list)
    median_seconds: int | None = None
    ratings: int = 0  # final candidate ratings
    blank_reasons: int = 0
    short_reasons: int = 0
    same_scores: int = 0  # items
    contradictions: int = 0  # items
    agreement: Any = None  # percent, or None: no comparison shared with another rater
    mean_kappa: float | None = None

    @property
    def flagged(self) -> bool:
        if self.finished < MIN_ITEMS_FOR_FLAG:
            return False
        return max(self.same_scores, self.contradictions) > FLAG_SHARE * self.finished


def _assignments(batch: Batch, rows: dict[str, RaterQuality]) -> None:
    durations: dict[str, list[float]] = defaultdict(list)
    skips: dict[str, Counter[str]] = defaultdict(Counter)
    for pseudonym, status, reason, created, finished in (
            Assignment.objects.filter(work_item__batch=batch).values_list(
                "annotator__pseudonym", "status", "skip_reason", "created_at", "finished_at").iterator(chunk_size=5000)):
        row = rows.setdefault(pseudonym, RaterQuality(pseudonym))
        row.served += 1
        if status == Assignment.Status.COMPLETED:
            row.finished += 1
            if finished is not None:
                durations[pseudonym].append((finished - created).total_seconds())
        elif status == Assignment.Status.SKIPPED:
            row.skipped += 1
            skips[pseudonym][reason or "(no reason)"] += 1
        elif status == Assignment.Status.ACTIVE:
            row.in_progress += 1
    for pseudonym, values in durations.items():
        rows[pseudonym].median_seconds = round(statistics.median(values))
    for pseudonym, counter in skips.items():
        rows[pseudonym].skip_reasons = counter.most_common(SKIP_REASONS_SHOWN)


def _judgments(batch: Batch, rows: dict[str, RaterQuality]) -> None:
    for item in rated_items(batch):
        for judgment in item.judgments:
            row = rows.setdefault(judgment.rater, RaterQuality(judgment.rater))
            scored = {n: tuple(s[d] for d in DIMENSIONS) for n, s in judgment.scores.items()
                      if all(s[d] is not None for d in DIMENSIONS)}
            for given in judgment.scores.values():
                reason = (given.get("reason") or "").strip()
                row.ratings += 1
                row.blank_reasons += not reason
                row.short_reasons += bool(reason) and len(reason) < SHORT_REASON_CHARS
            if len(scored) == len(item.responses) > 1 and len(set(scored.values())) == 1:
                row.same_scores += 1
            if judgment.groups and ranking_contradictions([list(g) for g in judgment.groups], scored):
                row.contradictions += 1


def preference_quality(batch: Batch) -> dict[str, Any]:
    """The quality page of a preference batch (StudyKind.quality): its template and context."""
    rows: dict[str, RaterQuality] = {}
    _assignments(batch, rows)
    _judgments(batch, rows)
    try:
        agreement = preference_agreement(pair_judgments(preference_data(batch).judgments))
    except ApplicationError:  # not a preference batch: the registry never sends one here
        agreement = None
    for rater in agreement.per_rater if agreement else []:
        row = rows.setdefault(str(rater.rater), RaterQuality(str(rater.rater)))
        row.agreement, row.mean_kappa = percent(rater.agreement), rater.mean_kappa
    return {
        "template": "evaluation/preference_quality.html",
        "raters": sorted(rows.values(), key=lambda r: name_key(r.pseudonym)),
        "short_reason_chars": SHORT_REASON_CHARS,
        "flag_share_pct": round(FLAG_SHARE * 100),
        "min_items_for_flag": MIN_ITEMS_FOR_FLAG,
    }
