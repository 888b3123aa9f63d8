"""Admin pages for batch import: the upload form, then a job page that follows progress and shows the report."""

from __future__ import annotations

from django import forms
from django.shortcuts import redirect, render

from annotate.errors import ApplicationError
from annotate.imports.jobs import import_job_create
from annotate.imports.registry import IMPORTERS
from annotate.imports.selectors import import_job_get, import_jobs_recent
from annotate.jobs.serializers import JobSerializer
from annotate.models import ModelConfig, User
from annotate.people.access import admin_required

KIND_HELP = {
    "interfeedback": "InterFeedback tasks: tasks.jsonl, or a zip with tasks.jsonl + images/",
    "fire": "FIRE conversations: the released JSON (list) or JSONL, in a zip with its images",
    "rows": "Benchmark rows: JSONL, CSV or Parquet (alone or zipped with images); map the columns below",
}


class ImportForm(forms.Form):
    file = forms.FileField(help_text="Checked completely before anything is written.")
    images = forms.FileField(
        required=False, label="Images (zip)",
        help_text="FIRE and preference batches: the images zip that goes with a JSON/JSONL file "
                  "(not needed when one zip holds both)",
    )
    name = forms.CharField(max_length=128, help_text="Batch name. Re-importing the same file into it changes nothing.")
    kind = forms.ChoiceField(choices=[(k, KIND_HELP.get(k, k)) for k in sorted(IMPORTERS)], initial="interfeedback")
    models = forms.ModelMultipleChoiceField(
        queryset=ModelConfig.objects.filter(is_active=True), required=False,
        widget=forms.CheckboxSelectMultiple, help_text="Models to evaluate (InterFeedback batches)",
    )
    researchers = forms.ModelMultipleChoiceField(
        queryset=User.objects.filter(role=User.Role.RESEARCHER, is_active=True).order_by("username"),
        required=False, widget=forms.CheckboxSelectMultiple, to_field_name="username",
        help_text="Researchers who may read the batch's reports from the start",
    )
    all_researchers = forms.BooleanField(required=False, label="Every researcher",
                                         help_text="Give every researcher account read access")
    annotators = forms.CharField(
        required=False, max_length=20_000, label="Annotators",
        help_text="Usernames (a,b): only they are served this batch (invited participants too). Empty: everyone "
                  "with the annotator role, or as before when re-importing; * opens it to everyone again",
    )
    overlap = forms.IntegerField(min_value=1, max_value=100, required=False, help_text="Annotators per item (K)")
    max_rounds = forms.IntegerField(min_value=1, max_value=10, required=False, help_text="Default 3")
    gold_rate = forms.FloatField(min_value=0, max_value=1, required=False, help_text="0 to 1")
    allow_repeat_tasks = forms.BooleanField(
        required=False, label="Allow repeat tasks",
        help_text="Serve a task again to an annotator with another model while they have not seen its answer "
                  "(otherwise each annotator gets each task once; turn it off again in the admin)",
    )
    instructions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), required=False,
        help_text="Markdown shown to annotators at the top of every item and on the batch's start page",
    )
    budget = forms.DecimalField(required=False, min_value=0, max_digits=12, decimal_places=2,
                                help_text="Model spending limit (the models' prices); once reached, no new session")
    category_order = forms.CharField(
        required=False, max_length=5000, label="Category order",
        help_text="Comma-separated category names, the columns of the report's tables in this order "
                  "(e.g. Visual Logic,MMMU-Pro,MathVerse); the rest follow as they first appear in the file",
    )
    seed = forms.IntegerField(
        min_value=0, max_value=2**31 - 1, required=False, label="Serving seed",
        help_text="Seed of the order tasks and models are served in; empty: a random one (shown on the report). "
                  "The same seed serves a study again in the same order")
    skips_count_toward_share = forms.BooleanField(
        required=False, label="Skips count toward a participant's share",
        help_text="Invited participants' skipped items count as done, up to the number below (otherwise only "
                  "completed items earn the completion code)")
    max_counted_skips = forms.IntegerField(min_value=0, max_value=1000, required=False,
                                           help_text="How many skips count at most (default 1)")
    prompt_templates = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False,
                                       help_text='JSON, e.g. {"receiver_retry": "{feedback}\\nTry again."}')
    column_map = forms.CharField(required=False, help_text="Rows only: question=question,answer=answer,id=qid,...")
    category = forms.CharField(required=False, max_length=100, help_text="Rows only: category when the file has none")
    dry_run = forms.BooleanField(required=False, help_text="Validate and report only")
    update = forms.BooleanField(required=False, help_text="Replace tasks whose content changed")


@admin_required(message="Only admins may import batches.")
def import_new(request):
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        settings = {"models": [m.name for m in data["models"]] or None, "overlap": data["overlap"],
                    "max_rounds": data["max_rounds"], "gold_rate": data["gold_rate"],
                    "prompt_templates": data["prompt_templates"] or None,
                    "allow_repeat_tasks": data["allow_repeat_tasks"] or None,  # unticked: leave it as it is
                    "instructions": data["instructions"] or None,
                    "category_order": data["category_order"] or None,
                    "budget": None if data["budget"] is None else str(data["budget"]),  # JSON in the job
                    "annotators": data["annotators"].strip() or None,
                    "seed": data["seed"], "max_counted_skips": data["max_counted_skips"],
                    "skips_count_toward_share": data["skips_count_toward_share"] or None,  # unticked: as it is
                    "researchers": "*" if data["all_researchers"]
                    else [u.username for u in data["researchers"]] or None}
        try:
            job = import_job_create(
                upload=data["file"], name=data["name"], kind=data["kind"], created_by=request.user,
                settings={k: v for k, v in settings.items() if v is not None},
                options={"map": data["column_map"], "category": data["category"]},
                update=data["update"], dry_run=data["dry_run"], images=data["images"],
            )
        except ApplicationError as error:
            for problem in error.extra.get("problems", []) or [{"text": error.message}]:
                form.add_error(None, problem["text"])
        else:
            return redirect("import-job", job_id=job.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "annotate/import_new.html", {"form": form, "jobs": import_jobs_recent()}, status=status)


@admin_required(message="Only admins may import batches.")
def import_job_page(request, job_id: int):
    job = import_job_get(job_id)  # NotFound: the 404 page (admin_required)
    return render(request, "annotate/import_job.html", {"job": job, "payload": JobSerializer(job).data})
