"""Admin pages for batch import: the upload form, then a job page that follows progress and shows the report."""

from __future__ import annotations

from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from annotate.errors import ApplicationError, NotFound
from annotate.imports import display
from annotate.imports.forms import KIND_NAMES, ImportForm, initial_from_job
from annotate.imports.jobs import import_job_create
from annotate.imports.selectors import import_job_get, import_jobs_recent
from annotate.jobs.serializers import JobSerializer
from annotate.models import Job
from annotate.people.access import admin_required


@admin_required(message="Only admins may import batches.")
def import_new(request):
    """The form; ``?again=<job id>`` fills it with an earlier import's values (its files are chosen again)."""
    initial, again = {}, None
    if request.method == "GET" and request.GET.get("again", "").isdigit():
        try:
            again = import_job_get(int(request.GET["again"]))
        except NotFound:
            again = None
        initial = initial_from_job(again) if again is not None else {}
    form = ImportForm(request.POST or None, request.FILES or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = import_job_create(
                upload=data["file"], name=data["name"], kind=data["kind"], created_by=request.user,
                settings=form.settings(), options={"map": data["column_map"], "category": data["category"]},
                update=data["update"], dry_run=data["dry_run"], images=data["images"],
            )
        except ApplicationError as error:
            for problem in error.extra.get("problems", []) or [{"text": error.message}]:
                form.add_error(None, display.with_code(problem["text"]))
        else:
            return redirect("import-job", job_id=job.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "annotate/import_new.html", {
        "form": form, "jobs": [(job, display.outcome(job)) for job in import_jobs_recent()], "again": again,
        "choose_files_again": request.method == "POST" or again is not None}, status=status)


@admin_required(message="Only admins may import batches.")
def import_job_page(request, job_id: int):
    job = import_job_get(job_id)  # NotFound: the 404 page (admin_required)
    payload = JobSerializer(job).data
    read, done = display.count_rows(job)
    params = job.params or {}
    batch = job.batch if job.batch_id and not params.get("dry_run") and job.status == Job.Status.SUCCEEDED else None
    return render(request, "annotate/import_job.html", {
        "job": job, "payload": payload, "outcome": display.outcome(job), "read_counts": read, "done_counts": done,
        "problems": display.problems(job), "warnings": [display.with_code(w) for w in (job.report or {}).get(
            "warnings", [])], "batch": batch, "kind_label": KIND_NAMES.get(params.get("kind", ""), params.get("kind")),
        "done_title": _("What the import would do") if params.get("dry_run") else _("What the import did")})
