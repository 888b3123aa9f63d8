"""Researcher page: per-annotator quality of a batch (speed flags, leak warnings, skips, gold accuracy), or the
measures its kind of study registers (evaluation.kinds: StudyKind.quality).

It is the one page that shows whether an annotator's stated answers were right: researchers only."""

from __future__ import annotations

from django.shortcuts import render

from annotate.crowd.attention import GOLD_CHECK_TYPES
from annotate.people.access import batch_for_researcher, researcher_required
from evaluation.kinds import kind_of
from evaluation.quality.selectors import FAST_ROUND_MS, FAST_SESSION_FRACTION, batch_quality


@researcher_required
def batch_quality_page(request, batch_id: int):
    batch = batch_for_researcher(request.user, batch_id)  # members and admins; others get 404
    if (own := kind_of(batch).quality) is not None:  # a kind of study with its own measures (preference)
        context = own(batch)
        return render(request, context.pop("template"), {**context, "batch": batch})
    return render(request, "annotate/quality.html", {
        "quality": batch_quality(batch),
        "batch": batch,
        "fast_round_s": FAST_ROUND_MS / 1000,
        "fast_session_pct": round(FAST_SESSION_FRACTION * 100),
        "gold_check_types": ", ".join(GOLD_CHECK_TYPES),
    })

