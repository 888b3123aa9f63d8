"""Researcher pages of a preference batch's report (reached from the batch's report page), and its downloads."""

from __future__ import annotations

from django.http import HttpResponseBadRequest
from django.shortcuts import render
from django.urls import reverse

from annotate.errors import ApplicationError
from annotate.people.access import batch_for_researcher, researcher_required
from evaluation.exports.renderers.html import html_table
from evaluation.exports.responses import export_response
from evaluation.preference.reports import (
    PREFERENCE_FORMATS,
    PREFERENCE_TABLES,
    preference_export,
    preference_report,
)

TABLE_HEADINGS = {
    "pairs": "Pairwise preferences",
    "agreement": "Rater agreement",
    "kappa": "Agreement per rater pair",
    "scores": "Candidate scores per model",
}
TABLE_EMPTY = {
    "pairs": "No pair of candidates with different models was ranked yet.",
    "agreement": "No comparison was judged by two or more raters yet.",
    "kappa": "No comparison was judged by two or more raters yet.",
    "scores": "No final candidate scores yet.",
}


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
