"""Researcher pages: batch list, batch report (Table 3/4, Fig. 4/5, breakdown), session browser, transcripts.

Pages read counters through selectors; figures and downloads are separate requests to the export pages
(evaluation/exports/views.py).
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from annotate.costs import batch_costs, budget_message
from annotate.errors import ApplicationError
from annotate.people.access import researcher_required
from annotate.queue.capacity import batch_capacity
from annotate.server.throttles import job_creation_wait
from evaluation.exports import registry as exports
from evaluation.exports.filters import NO_FILTERS, OUTCOME_CHOICES, filters_from_request
from evaluation.exports.renderers.html import html_table
from evaluation.interfeedback import selectors, services
from evaluation.interfeedback.metrics import FEEDBACK_ROUNDS, accuracy, correction_rate
from evaluation.kinds import kind_of
from evaluation.stats import percent
from evaluation.table import cell_text

SESSIONS_PER_PAGE = 50
BREAKDOWN_ROWS = 100


def breakdown_rows(annotators) -> list[dict]:
    return [
        {
            "pseudonym": row.pseudonym,
            "sessions": row.counts.sessions,
            "accuracy": cell_text(percent(accuracy(row.counts))),
            "rates": [cell_text(percent(correction_rate(row.counts, k))) for k in FEEDBACK_ROUNDS],
            "never": row.counts.never,
        }
        for row in annotators
    ]


def download_links(batch, querystring: str) -> list[dict]:
    """The exports the batch's kind offers (evaluation.kinds), each in its formats."""
    return [
        {"name": name, "links": [(fmt, _export_url(batch.id, name, fmt, querystring)) for fmt in exports.EXPORTS[name]]}
        for name in kind_of(batch).downloads if name in exports.EXPORTS
    ]


def _export_url(batch_id: int, name: str, fmt: str, querystring: str) -> str:
    url = reverse("research-export", args=[batch_id, name, fmt])
    return f"{url}?{querystring}" if querystring else url


@researcher_required
def researcher_home(request):
    return render(request, "evaluation/home.html", {"batches": selectors.batches_for_researcher(request.user)})


@researcher_required
def batch_report(request, batch_id: int):
    batch = selectors.batch_for_researcher(request.user, batch_id)
    form, filters, error = filters_from_request(request)
    try:
        report = selectors.batch_report(batch, filters)
    except ApplicationError as failure:
        error, report = failure.message, selectors.batch_report(batch, NO_FILTERS)
        filters = NO_FILTERS
    querystring = filters.querystring()
    study = kind_of(batch)
    return render(request, "evaluation/report.html", {
        **study.report_sections(batch),
        "study": study,
        "costs": batch_costs(batch),
        "budget_message": budget_message(batch),
        "capacity": batch_capacity(batch),
        "batch": batch,
        "aggregate": selectors.aggregate_of(batch),
        "form": form,
        "filter_error": error,
        "filters": filters,
        "options": selectors.filter_options(batch),
        "querystring": querystring,
        "sessions": report.sessions,
        "accuracy": html_table(report.accuracy),
        "correction": html_table(report.correction),
        "has_counts": bool(report.counts),
        "figures": [(name, _export_url(batch.id, name, "svg", querystring)) for name in ("fig4", "fig5")],
        "annotators": breakdown_rows(report.annotators[:BREAKDOWN_ROWS]),
        "annotators_total": len(report.annotators),
        "downloads": download_links(batch, querystring),
        "direct_sessions_limit": exports.DIRECT_SESSIONS_LIMIT,
    })


@researcher_required
@require_POST
def batch_recompute(request, batch_id: int):
    batch = selectors.batch_for_researcher(request.user, batch_id)
    if wait := job_creation_wait(request):
        messages.error(request, wait)
        return redirect("research-report", batch_id=batch.id)
    job = services.recompute_job_create(batch=batch, user=request.user)
    messages.info(request, gettext("Recount queued (job %(job)s). Reload this page in a few seconds.") % {"job": job.id})
    return redirect("research-report", batch_id=batch.id)


@researcher_required
def session_list(request, batch_id: int):
    batch = selectors.batch_for_researcher(request.user, batch_id)
    form, filters, error = filters_from_request(request)
    page = Paginator(selectors.counted_sessions(batch, filters), SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "evaluation/sessions.html", {
        "batch": batch,
        "form": form,
        "filter_error": error,
        "options": selectors.filter_options(batch),
        "outcome_choices": OUTCOME_CHOICES,
        "page": page,
        "querystring": filters.querystring(),
    })


@researcher_required
def session_detail(request, batch_id: int, session_id: int):
    batch = selectors.batch_for_researcher(request.user, batch_id)
    session = selectors.session_for_batch(batch, session_id)
    return render(request, "evaluation/session.html", {
        "batch": batch,
        "session": session,
        "rounds": list(session.rounds.all()),
        "images": [ti.blob.sha256 for ti in session.task.task_images.all()],
    })
