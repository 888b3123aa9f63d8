"""Researcher pages of a preference batch's report (reached from the batch's report page), its downloads, and the
preference section of the batch's report page (``report_sections``, registered with the batch kinds)."""

from __future__ import annotations

from django.http import HttpResponseBadRequest
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from annotate.errors import ApplicationError
from annotate.models import Assignment, Batch, Conversation, Ranking
from annotate.people.access import batch_for_researcher, researcher_required
from evaluation.exports.renderers.html import html_table
from evaluation.exports.responses import export_response
from evaluation.preference.reports import (
    PREFERENCE_FORMATS,
    PREFERENCE_TABLES,
    RAW_EXPORTS,
    preference_export,
    preference_report,
)

TABLE_HEADINGS = {
    "pairs": _("Pairwise preferences"),
    "agreement": _("Rater agreement"),
    "kappa": _("Agreement per rater pair"),
    "scores": _("Candidate scores per model"),
}
TABLE_EMPTY = {
    "pairs": _("No pair of candidates with different models was ranked yet."),
    "agreement": _("No comparison was judged by two or more raters yet."),
    "kappa": _("No comparison was judged by two or more raters yet."),
    "scores": _("No final candidate scores yet."),
}


def report_sections(batch: Batch) -> dict:
    """The batch report page's preference section (StudyKind.report_sections): its progress in judgments (items,
    final rankings against the K per item needed, raters, skips, items being rated now) and the way to its tables
    and raw exports. Six counts."""
    conversations = Conversation.objects.filter(batch=batch).count()
    rankings = Ranking.objects.filter(conversation__batch=batch, is_final=True)
    assignments = Assignment.objects.filter(work_item__batch=batch)
    needed = conversations * batch.overlap
    done = rankings.count()
    active = assignments.filter(status=Assignment.Status.ACTIVE).count()
    return {"preference": {
        "items": conversations, "rated_items": rankings.values("conversation").distinct().count(),
        "rankings": done, "needed": needed, "in_progress": active, "left": max(0, needed - done - active),
        "raters": rankings.values("annotator").distinct().count(),
        "skips": assignments.filter(status=Assignment.Status.SKIPPED).count(),
        "page": reverse("research-preferences", args=[batch.id]),
    }}


@researcher_required
def preference_report_page(request, batch_id: int):
    batch = batch_for_researcher(request.user, batch_id)
    context = {"batch": batch, "api_url": reverse("api-batch-preferences", args=[batch.id])}
    try:
        report = preference_report(batch)
    except ApplicationError as error:  # a batch of another kind
        return render(request, "evaluation/preferences.html", {**context, "error": error.message}, status=400)
    return render(request, "evaluation/preferences.html", {
        **context,
        "data": report.data,
        "tables": [{"name": name, "heading": TABLE_HEADINGS[name], "table": html_table(table),
                    "empty": TABLE_EMPTY[name]}
                   for name, table in report.tables().items()],
        "downloads": [{"name": name, "links": [(fmt, reverse("research-preference-export", args=[batch.id, name, fmt]))
                                               for fmt in PREFERENCE_FORMATS]}
                      for name in PREFERENCE_TABLES],
        "raw": [{"name": name, "links": [(fmt, reverse("research-export", args=[batch.id, name, fmt]))
                                         for fmt in formats]}
                for name, formats in RAW_EXPORTS],
    })


@researcher_required
def preference_export_download(request, batch_id: int, name: str, fmt: str):
    batch = batch_for_researcher(request.user, batch_id)
    try:
        export = preference_export(batch, name, fmt)
    except ApplicationError as failure:
        if failure.http_status == 404:
            raise
        return HttpResponseBadRequest(failure.message, content_type="text/plain")
    return export_response(request, export)
