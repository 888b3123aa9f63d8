"""The import form: every setting of an import, each field marked with the kinds of batch it applies to (the page
shows those of the chosen kind; without JavaScript every field shows and works), and its values filled again from
an earlier import job (a failed import or a dry run is tried again without typing everything anew)."""

from __future__ import annotations

import json

from django import forms
from django.utils.translation import gettext_lazy as _

from annotate.imports.registry import IMPORTERS
from annotate.models import Job, ModelConfig, User

KIND_HELP = {
    "interfeedback": _("InterFeedback tasks: tasks.jsonl, or a zip with tasks.jsonl + images/"),
    "fire": _("FIRE conversations: the released JSON (list) or JSONL, in a zip with its images"),
    "preference": _("Preference records (MM-RLHF style): JSON/JSONL, in a zip with its images"),
    "rows": _("Benchmark rows: JSONL, CSV or Parquet (alone or zipped with images); map the columns below"),
}
KIND_NAMES = {"interfeedback": _("InterFeedback tasks"), "fire": _("FIRE conversations"),
              "preference": _("Preference records"), "rows": _("Benchmark rows")}
SESSIONS = ("interfeedback", "rows")  # batches of (task, model) sessions
CONVERSATIONS = ("fire", "preference")  # batches of conversations to rate
# The kinds each field applies to; a field not named here applies to every kind.
FIELD_KINDS = {
    "images": CONVERSATIONS, "models": SESSIONS, "max_rounds": SESSIONS, "gold_rate": SESSIONS,
    "allow_repeat_tasks": SESSIONS, "budget": SESSIONS, "category_order": SESSIONS, "seed": SESSIONS,
    "prompt_templates": SESSIONS, "column_map": ("rows",), "category": ("rows",),
}


KEEP_YES_NO = {"": None, "yes": True, "no": False}  # a per-batch on/off setting: keep it, switch it on, or off
_CHOICE_OF = {value: choice for choice, value in KEEP_YES_NO.items()}  # a job's saved True/False back to the form's
ON_OFF = ("allow_repeat_tasks", "open_to_all_annotators", "skips_count_toward_share")


def keep_yes_no(label, help_text) -> forms.TypedChoiceField:
    """An on/off batch setting as the form shows it: as the batch has it (a new batch: off), yes, or no; what is
    chosen is what the batch gets (an unticked box could not tell "leave it" from "switch it off")."""
    return forms.TypedChoiceField(
        required=False, label=label, help_text=help_text, coerce=KEEP_YES_NO.get, empty_value=None,
        choices=[("", _("As the batch has it (a new batch: no)")), ("yes", _("Yes")), ("no", _("No"))])


class ImportForm(forms.Form):
    field_order = ["kind", "file", "images", "name"]  # the kind first: it decides which fields follow
    file = forms.FileField(help_text=_("Checked completely before anything is written."))
    images = forms.FileField(
        required=False, label=_("Images (zip)"),
        help_text=_("FIRE and preference batches: the images zip that goes with a JSON/JSONL file "
                    "(not needed when one zip holds both)"),
    )
    name = forms.CharField(max_length=128, label=_("Name"),
                           help_text=_("Batch name. Re-importing the same file into it changes nothing."))
    kind = forms.ChoiceField(label=_("Kind"), choices=[(k, KIND_HELP.get(k, k)) for k in sorted(IMPORTERS)],
                             initial="interfeedback")
    models = forms.ModelMultipleChoiceField(
        queryset=ModelConfig.objects.filter(is_active=True), required=False, label=_("Models"),
        widget=forms.CheckboxSelectMultiple,
        help_text=_("Models to evaluate (InterFeedback batches)"),
    )
    researchers = forms.ModelMultipleChoiceField(
        queryset=User.objects.filter(role=User.Role.RESEARCHER, is_active=True).order_by("username"),
        required=False, widget=forms.CheckboxSelectMultiple, to_field_name="username", label=_("Researchers"),
        help_text=_("Researchers who may read the batch's reports from the start"),
    )
    all_researchers = forms.BooleanField(required=False, label=_("Every researcher"),
                                         help_text=_("Give every researcher account read access"))
    annotators = forms.CharField(
        required=False, max_length=20_000, label=_("Annotators"),
        help_text=_("Usernames (a,b): only they are served this batch (invited participants too), and they are "
                    "served no batch that does not name them. Empty: every annotator who belongs to no other "
                    "batch, or as before when re-importing; * names no one again"),
    )
    open_to_all_annotators = keep_yes_no(
        label=_("Open to all annotators"),
        help_text=_("Serve this batch to every annotator account, also the people named on other batches "
                    "(otherwise they see only their own batches)"),
    )
    overlap = forms.IntegerField(min_value=1, max_value=100, required=False, label=_("Overlap"),
                                 help_text=_("Annotators per item (K)"))
    max_rounds = forms.IntegerField(min_value=1, max_value=10, required=False, label=_("Max rounds"),
                                    help_text=_("Default 3"))
    gold_rate = forms.FloatField(
        min_value=0, max_value=1, required=False, label=_("Attention rate (gold items)"),
        help_text=_("0 to 1: the share of each person's items that are attention checks; the study settings call it "
                    "attention_rate"))
    allow_repeat_tasks = keep_yes_no(
        label=_("Allow repeat tasks"),
        help_text=_("Serve a task again to an annotator with another model while they have not seen its answer "
                    "(otherwise each annotator gets each task once)"),
    )
    instructions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), required=False, label=_("Instructions"),
        help_text=_("Markdown shown to annotators at the top of every item and on the batch's start page"),
    )
    budget = forms.DecimalField(required=False, min_value=0, max_digits=12, decimal_places=2, label=_("Budget"),
                                help_text=_("Model spending limit (the models' prices); once reached, no new session"))
    category_order = forms.CharField(
        required=False, max_length=5000, label=_("Category order"),
        help_text=_("Comma-separated category names, the columns of the report's tables in this order "
                    "(e.g. Visual Logic,MMMU-Pro,MathVerse); the rest follow as they first appear in the file"),
    )
    seed = forms.IntegerField(
        min_value=0, max_value=2**31 - 1, required=False, label=_("Serving seed"),
        help_text=_("Seed of the order tasks and models are served in; empty: a random one (shown on the report). "
                    "The same seed serves a study again in the same order"))
    skips_count_toward_share = keep_yes_no(
        label=_("Skips count toward a participant's share"),
        help_text=_("Invited participants' skipped items count as done, up to the number below (otherwise only "
                    "completed items earn the completion code)"))
    max_counted_skips = forms.IntegerField(min_value=0, max_value=1000, required=False, label=_("Max counted skips"),
                                           help_text=_("How many skips count at most (default 1)"))
    prompt_templates = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False,
                                       label=_("Prompt templates"),
                                       help_text=_('JSON, e.g. {"receiver_retry": "{feedback}\\nTry again."}'))
    column_map = forms.CharField(required=False, label=_("Column map"),
                                 help_text=_("Rows only: question=question,answer=answer,id=qid,..."))
    category = forms.CharField(required=False, max_length=100, label=_("Category"),
                               help_text=_("Rows only: category when the file has none"))
    dry_run = forms.BooleanField(required=False, label=_("Dry run"), help_text=_("Validate and report only"))
    update = forms.BooleanField(required=False, label=_("Update"), help_text=_("Replace tasks whose content changed"))

    def field_rows(self):
        """(bound field, kinds it applies to: a space-separated list, empty for every kind) in order."""
        return [(field, " ".join(FIELD_KINDS.get(field.name, ()))) for field in self]

    def settings(self) -> dict:
        """The checked values as the import's settings (left out: as the batch has them)."""
        data = self.cleaned_data
        settings = {"models": [m.name for m in data["models"]] or None, "overlap": data["overlap"],
                    "max_rounds": data["max_rounds"], "gold_rate": data["gold_rate"],
                    "prompt_templates": data["prompt_templates"] or None,
                    "allow_repeat_tasks": data["allow_repeat_tasks"],
                    "open_to_all_annotators": data["open_to_all_annotators"],
                    "instructions": data["instructions"] or None,
                    "category_order": data["category_order"] or None,
                    "budget": None if data["budget"] is None else str(data["budget"]),  # JSON in the job
                    "annotators": data["annotators"].strip() or None,
                    "seed": data["seed"], "max_counted_skips": data["max_counted_skips"],
                    "skips_count_toward_share": data["skips_count_toward_share"],
                    "researchers": "*" if data["all_researchers"]
                    else [u.username for u in data["researchers"]] or None}
        return {k: v for k, v in settings.items() if v is not None}


def initial_from_job(job: Job) -> dict:
    """The form's values as an earlier import job was given them (its files must be chosen again)."""
    params = job.params or {}
    settings = dict(params.get("settings") or {})
    options = params.get("options") or {}
    researchers = settings.pop("researchers", None)
    initial = {key: value for key, value in settings.items()
               if key in ImportForm.base_fields and key not in ("models",)}
    if isinstance(settings.get("models"), list):
        initial["models"] = list(ModelConfig.objects.filter(name__in=settings["models"]).values_list("pk", flat=True))
    if researchers == "*":
        initial["all_researchers"] = True
    elif isinstance(researchers, list):
        initial["researchers"] = researchers
    for key in ON_OFF:
        if key in initial:
            initial[key] = _CHOICE_OF.get(initial[key], "")
    if isinstance(initial.get("prompt_templates"), dict):
        initial["prompt_templates"] = json.dumps(initial["prompt_templates"])
    initial.update({"name": params.get("name", ""), "kind": params.get("kind", "interfeedback"),
                    "column_map": options.get("map", ""), "category": options.get("category", ""),
                    "dry_run": bool(params.get("dry_run")), "update": bool(params.get("update"))})
    return initial
