"""An import's gold items checked as attention checks: a check must look like any other item of its batch, must be
scorable, and the batch must have enough of them for every participant's planned checks (annotate.queue.gold).

- A gold item of an answer type that none of the batch's ordinary tasks has is refused: a gold ``manual`` task in a
  batch of automatically checked ones is the only item with a "judging reference" box, and a participant can tell
  it apart (and read its answer). The same holds the other way round, and for options shown or not.
- A gold item the app cannot score (no ``gold_check_type`` on a manual one, no ``gold_feedback_terms`` on an
  automatically checked one), and one whose category no ordinary task has (the page shows the category), are
  warnings: the import goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotate.crowd.attention import GOLD_CHECK_TYPES
from annotate.importkit.common import ImportReport
from annotate.models import Batch, Task
from annotate.queue.gold import check_supply


def gold_items_check(records: Sequence[Any], clean: dict, existing: Batch | None, report: ImportReport) -> None:
    """Refuse gold items that would stand out among the batch's items; warn about unscorable ones and a supply of
    checks short of the plan."""
    incoming = {r.external_id for r in records}
    ordinary = [(r.answer_type, r.category) for r in records if not r.is_gold]
    gold = [r for r in records if r.is_gold]
    kept_gold = 0
    if existing is not None:
        kept = Task.objects.filter(batch=existing).exclude(external_id__in=incoming)
        ordinary += list(kept.filter(is_gold=False).values_list("answer_type", "category"))
        kept_gold = kept.filter(is_gold=True).count()
    answer_types = {answer_type for answer_type, _ in ordinary}
    categories = {category for _, category in ordinary}
    unscored = []
    for record in gold:
        terms = (record.metadata or {}).get("gold_feedback_terms")
        if terms is not None and not (isinstance(terms, list) and all(isinstance(t, str) for t in terms)):
            report.add(record.line, "meta.gold_feedback_terms", f"expected a list of words or phrases, got {terms!r}")
            continue
        if answer_types and record.answer_type not in answer_types:
            report.add(record.line, "answer_type",
                       f"gold item {record.external_id!r} is of answer type {record.answer_type!r}, which none of "
                       f"the batch's other tasks has ({', '.join(sorted(answer_types))}): as an attention check it "
                       f"would look unlike every other item. Give gold items an answer type the batch's tasks have.")
            continue
        if categories and record.category not in categories:
            report.warn(f"Gold item {record.external_id!r} has category {record.category!r}, which no other task "
                        f"has: participants see the category, so the check stands out.")
        if not _scorable(record.answer_type, record.metadata or {}):
            unscored.append(record.external_id)
    if unscored:
        report.warn(f"{len(unscored)} gold item(s) cannot be scored as attention checks ("
                    f"{', '.join(unscored[:5])}{', …' if len(unscored) > 5 else ''}): a manual one needs "
                    f"meta.gold_check_type ({', '.join(GOLD_CHECK_TYPES)}), an automatically checked one "
                    f"meta.gold_feedback_terms (a list of words its feedback should name).")
    rate = _setting(clean, existing)
    share = existing.items_per_participant if existing is not None else None
    for sentence in check_supply(rate=rate, share=share, gold_items=len(gold) + kept_gold).sentences():
        report.warn(sentence)


def _scorable(answer_type: str, meta: dict) -> bool:
    if answer_type == Task.AnswerType.MANUAL:
        return meta.get("gold_check_type") in GOLD_CHECK_TYPES
    terms = meta.get("gold_feedback_terms")
    return isinstance(terms, list) and any(isinstance(t, str) and t.strip() for t in terms)


def _setting(clean: dict, existing: Batch | None) -> float:
    """The attention rate the batch will have: the import's settings (either name), else the batch's own."""
    study = clean.get("study") or {}
    if "attention_rate" in study:
        return float(study["attention_rate"])
    if "gold_rate" in clean:
        return float(clean["gold_rate"])
    return existing.gold_rate if existing is not None else 0.0
