"""Researcher pages of exports: any export of a batch as a file, and the sessions export and the study bundle as
background jobs (their forms, then the job's page, which polls it until its file can be downloaded)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotate.errors import ApplicationError, NotFound
from annotate.people.access import batch_for_researcher, researcher_required
from annotate.server.throttles import job_creation_wait
from evaluation.exports import jobs as export_jobs
from evaluation.exports import registry as exports
from evaluation.exports.filters import filters_from_request
from evaluation.exports.responses import export_response


@researcher_required
def batch_export(request, batch_id: int, name: str, fmt: str):
    batch = batch_for_researcher(request.user, batch_id)
    form, filters, error = filters_from_request(request)
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
def batch_sessions_export_job(request, batch_id: int):
    """The report's "Export sessions" form (filters in the query string): queue the job, show its page."""
    batch = batch_for_researcher(request.user, batch_id)
    form, filters, error = filters_from_request(request)
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
    batch = batch_for_researcher(request.user, batch_id)
    if wait := job_creation_wait(request):
        messages.error(request, wait)
        return redirect("research-report", batch_id=batch.id)
    job = export_jobs.bundle_export_job_create(batch=batch, user=request.user)
    return redirect("research-export-job", batch_id=batch.id, job_id=job.id)



@researcher_required
def batch_export_job(request, batch_id: int, job_id: int):
    """An export job's progress (polled by static/js/export_job.js) and, once done, its download link."""
    batch = batch_for_researcher(request.user, batch_id)
    return render(request, "evaluation/export_job.html", {
        "batch": batch, "job": export_jobs.export_job_for_batch(batch, job_id),
    })
