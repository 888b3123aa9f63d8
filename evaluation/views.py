"""Researcher pages: batch list, batch report (Table 3/4, Fig. 4/5, breakdown), session browser, transcripts.

Pages read counters through selectors; figures and downloads are separate requests to `batch_export`.
"""

from __future__ import annotations

import json
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from annotate.costs import batch_costs, budget_message
from annotate.errors import ApplicationError, NotFound
from annotate.errors import PermissionDenied as DomainPermissionDenied
from annotate.models import Rating
from annotate.queue.capacity import batch_capacity
from annotate.server.throttles import job_creation_wait
from evaluation import export_jobs, exports, selectors, services
from evaluation.exporters.tables import render as render_table
from evaluation.filters import NO_FILTERS, OUTCOME_CHOICES, ReportFilterForm, form_error_text
from evaluation.fire import reports as fire_reports
from evaluation.metrics import FEEDBACK_ROUNDS, accuracy, correction_rate, percent
from evaluation.responses import export_response
from evaluation.table import Table, cell_text

SESSIONS_PER_PAGE = 50
BREAKDOWN_ROWS = 100


def researcher_required(view):
    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_researcher_role:
            raise PermissionDenied("Researchers only")
        try:
            return view(request, *args, **kwargs)
        except NotFound as error:
            raise Http404(error.message) from None
        except DomainPermissionDenied as error:
            raise PermissionDenied(error.message) from None

    return wrapped


def _filters(request):
    """(form, filters, error): bad filter values show as a message on the page and are ignored."""
    form = ReportFilterForm(request.GET or None)
    if form.is_bound and form.is_valid():
        return form, form.filters(), ""
    return form, NO_FILTERS, form_error_text(form) if form.is_bound else ""


def html_table(table: Table) -> dict:
    """A Table as text cells, each flagged for right alignment (numbers, and "-" for undefined ones)."""
    return {
        "title": table.title,
        "columns": table.columns,
        "rows": [[(cell_text(cell), not isinstance(cell, str)) for cell in row] for row in table.rows],
        "notes": table.notes,
    }


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


# The FIRE report's sections: (export name, by, heading), each as on `export_fire --what NAME [--by BY]`.
FIRE_SECTIONS = (
    ("table-a1", "split", _("Table A1 · Mean ratings (1-5) with 95% CIs, per split")),
    ("summary", "source", _("Mean ratings per source")),
    ("summary", "turn", _("Mean ratings per turn")),
    ("agreement", "split", _("Inter-rater agreement: Krippendorff's alpha (ordinal and interval)")),
    ("kappa", "split", _("Pairwise quadratic-weighted kappa")),
    ("disagreements", "split", _("Turns with the largest disagreement")),
)
FIRE_FORMATS = ("md", "csv", "tex", "json")


def _fire_sections(batch) -> dict:
    """Each FIRE table as HTML with its downloads, or why it is empty (no ratings yet; agreement needs 2 raters)."""
    raters = Rating.objects.filter(turn__conversation__batch=batch, is_final=True).values("annotator").distinct()
    sections = []
    for what, by, heading in FIRE_SECTIONS:
        links = [(fmt, reverse("research-fire-export", args=[batch.id, what, fmt]) + f"?by={by}")
                 for fmt in FIRE_FORMATS]
        try:
            table = html_table(fire_reports.FIRE_TABLES[what](batch, by=by))
        except ApplicationError as reason:
            sections.append({"id": f"fire-{what}-{by}", "heading": heading, "empty": reason.message, "links": []})
            continue
        sections.append({"id": f"fire-{what}-{by}", "heading": heading, "table": table, "links": links})
    return {"sections": sections, "raters": raters.count(),
            "long": [(fmt, reverse("research-fire-export", args=[batch.id, "ratings", fmt])) for fmt in ("csv", "json")]
            + [("fire json", reverse("research-fire-export", args=[batch.id, "conversations", "json"]))]}


@researcher_required
def batch_fire_export(request, batch_id: int, what: str, fmt: str):
    """A FIRE table (or the rated conversations) as a file: what `export_fire` writes."""
    batch = selectors.batch_for_researcher(request.user, batch_id)
    if batch.kind != batch.Kind.FIRE:
        raise Http404("Not a FIRE batch.")
    by = request.GET.get("by", "split")
    if by not in ("split", "source", "turn"):
        return HttpResponseBadRequest("by must be split, source or turn.", content_type="text/plain")
    try:
        if what == "conversations" and fmt == "json":
            text = json.dumps(fire_reports.fire_conversations_export(batch), ensure_ascii=False, indent=1) + "\n"
            content_type = "application/json"
        elif what in fire_reports.FIRE_TABLES and fmt in FIRE_FORMATS:
            text = render_table(fire_reports.FIRE_TABLES[what](batch, by=by), fmt)
            content_type = exports.CONTENT_TYPES[fmt]
        else:
            raise Http404(f"No FIRE export {what}.{fmt}.")
    except ApplicationError as failure:
        return HttpResponseBadRequest(failure.message, content_type="text/plain")
    response = HttpResponse(text, content_type=content_type)
    suffix = f"-{by}" if what == "summary" else ""
    response["Content-Disposition"] = f'attachment; filename="{batch.name}-fire-{what}{suffix}.{fmt}"'
    return response


def download_links(batch, querystring: str) -> list[dict]:
    return [
        {"name": name, "links": [(fmt, _export_url(batch.id, name, fmt, querystring)) for fmt in formats]}
        for name, formats in exports.EXPORTS.items()
        if ((name in exports.FIRE_RATING_EXPORTS or name == "sessions") if batch.kind == batch.Kind.FIRE
            else name not in exports.FIRE_RATING_EXPORTS)
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
    form, filters, error = _filters(request)
    try:
        report = selectors.batch_report(batch, filters)
    except ApplicationError as failure:
        error, report = failure.message, selectors.batch_report(batch, NO_FILTERS)
        filters = NO_FILTERS
    querystring = filters.querystring()
    fire = _fire_sections(batch) if batch.kind == batch.Kind.FIRE else None
    return render(request, "evaluation/report.html", {
        "fire": fire,
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
def batch_export(request, batch_id: int, name: str, fmt: str):
    batch = selectors.batch_for_researcher(request.user, batch_id)
    form, filters, error = _filters(request)
    if error:
        return HttpResponseBadRequest(f"Bad filter: {error}", content_type="text/plain")
    try:
        if name == "sessions":  # large selections: the export job (batch_sessions_export_job)
            exports.sessions_direct_check(batch, filters)
        export = exports.build_export(batch, name, fmt, filters)
    except NotFound as failure:
        raise Http404(failure.message) from None
    except ApplicationError as failure:
        return HttpResponseBadRequest(failure.message, content_type="text/plain")
    return export_response(request, export)


@researcher_required
@require_POST
def batch_recompute(request, batch_id: int):
    batch = selectors.batch_for_researcher(request.user, batch_id)
    if wait := job_creation_wait(request):
        messages.error(request, wait)
        return redirect("research-report", batch_id=batch.id)
    job = services.recompute_job_create(batch=batch, user=request.user)
    messages.info(request, f"Recount queued (job {job.id}). Reload this page in a few seconds.")
    return redirect("research-report", batch_id=batch.id)


@researcher_required
def session_list(request, batch_id: int):
    batch = selectors.batch_for_researcher(request.user, batch_id)
    form, filters, error = _filters(request)
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


# --- sessions export as a background job (evaluation/export_jobs.py) ---------------------------------------


@researcher_required
@require_POST
def batch_sessions_export_job(request, batch_id: int):
    """The report's "Export sessions" form (filters in the query string): queue the job, show its page."""
    batch = selectors.batch_for_researcher(request.user, batch_id)
    form, filters, error = _filters(request)
    if error:
        messages.error(request, f"Bad filter: {error}")
        return redirect("research-report", batch_id=batch.id)
    if wait := job_creation_wait(request):
        messages.error(request, wait)
        return redirect("research-report", batch_id=batch.id)
    try:
        job = export_jobs.sessions_export_job_create(
            batch=batch, user=request.user, filters=filters, fmt=request.POST.get("format", "jsonl"),
            compress=request.POST.get("gzip") in ("1", "on", "true"),
        )
    except ApplicationError as failure:
        messages.error(request, failure.message)
        return redirect("research-report", batch_id=batch.id)
    return redirect("research-export-job", batch_id=batch.id, job_id=job.id)


@researcher_required
@require_POST
def batch_bundle_export_job(request, batch_id: int):
    """The report's "Download the study bundle" button: queue the bundle job, show its page."""
    batch = selectors.batch_for_researcher(request.user, batch_id)
    if wait := job_creation_wait(request):
        messages.error(request, wait)
        return redirect("research-report", batch_id=batch.id)
    job = export_jobs.bundle_export_job_create(batch=batch, user=request.user)
    return redirect("research-export-job", batch_id=batch.id, job_id=job.id)


@researcher_required
def batch_export_job(request, batch_id: int, job_id: int):
    """An export job's progress (polled by static/js/export_job.js) and, once done, its download link."""
    batch = selectors.batch_for_researcher(request.user, batch_id)
    return render(request, "evaluation/export_job.html", {
        "batch": batch, "job": export_jobs.export_job_for_batch(batch, job_id),
    })
