"""A batch's category order: the columns of Tables 3-4 and the panels of Fig. 5, in the order researchers want.

Given at import (``category_order``: names, a list or "a,b"), checked against the categories the batch will
hold; categories left out follow in the order they first appear in the file. Without one, the batch keeps the
order it had (a re-import), else takes the file's order of first appearance.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Min

from annotate.importkit.common import ImportReport
from annotate.models import Batch

FIELD = "settings.category_order"
MAX_NAME_CHARS = 100  # Task.category's length


def category_order_clean(value, report: ImportReport) -> list[str] | None:
    """Category names from a list or a comma-separated string, stripped and without repeats."""
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        report.add(None, FIELD, "expected category names, e.g. \"Visual Logic,MMMU-Pro,MathVerse\"")
        return None
    names = [n.strip() for n in names if n.strip()]
    if too_long := [n for n in names if len(n) > MAX_NAME_CHARS]:
        report.add(None, FIELD, f"category names are at most {MAX_NAME_CHARS} characters: {too_long[0][:40]!r}...")
        return None
    return list(dict.fromkeys(names))


def batch_categories(batch: Batch | None) -> list[str]:
    """The batch's categories in the order they first appear (task ids follow the imported file). One query."""
    if batch is None:
        return []
    firsts = batch.tasks.values("category").annotate(first=Min("id")).order_by("first")
    return [row["category"] for row in firsts]


def category_order_resolve(*, given: list[str] | None, previous: list[str], present: Iterable[str],
                           report: ImportReport) -> list[str] | None:
    """The order to store: ``given`` (else ``previous``) for the categories present, then the rest as they first
    appear. A given name that is not a category of the batch is a problem naming it (None is returned)."""
    present = list(dict.fromkeys(present))
    known = set(present)
    if given is not None:
        unknown = [name for name in given if name not in known]
        if unknown:
            report.add(None, FIELD, f"unknown categor{'y' if len(unknown) == 1 else 'ies'} "
                       f"{', '.join(map(repr, unknown))}; the batch's categories: "
                       f"{', '.join(map(repr, present)) or 'none'}")
            return None
    base = [name for name in (given if given is not None else previous) if name in known]
    return base + [name for name in present if name not in set(base)]
