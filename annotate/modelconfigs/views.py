"""Admin pages for models: the list with a create form, an edit form with Retire and Test buttons, and the test's
result page (reloads until a worker has answered)."""

from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from annotate.errors import InvalidFields, NotFound
from annotate.jobs.selectors import job_hint, job_is_finished
from annotate.modelconfigs import services
from annotate.modelconfigs.check import model_config_check
from annotate.modelconfigs.selectors import model_config_get, model_configs_list
from annotate.models import Job, ModelConfig
from annotate.people.access import admin_required
from annotate.people.pages import form_add_problems

SETTINGS_HELP = ('JSON. openai: {"base_url": "http://vllm:8000/v1", "model": "...", "api_key_env": "VLLM_API_KEY"} '
                 '(the NAME of an environment variable, never the key), or "endpoints": [{"base_url": ...}, ...] '
                 'for several servers; transformers: {"path": "/models/..."}')


class ModelForm(forms.Form):
    display_name = forms.CharField(required=False, max_length=128, strip=False,
                                   help_text=_('Shown in every table and plot, e.g. "GPT-4o"'))
    backend = forms.ChoiceField(choices=ModelConfig.Backend.choices)
    backend_settings = forms.JSONField(required=False, initial=dict, help_text=SETTINGS_HELP,
                                       widget=forms.Textarea(attrs={"rows": 4}))
    generation = forms.JSONField(required=False, initial=dict, widget=forms.Textarea(attrs={"rows": 2}),
                                 help_text=_('JSON: max_new_tokens, temperature, top_p, seed, stop'))
    queue = forms.CharField(required=False, max_length=64, help_text=_("Celery queue; blank = model.<backend>"))
    soft_time_limit = forms.IntegerField(initial=300, help_text=_("Seconds a model call may take before it is stopped"))
    time_limit = forms.IntegerField(initial=360, help_text=_("Seconds before the worker is killed (above the soft limit)"))
    input_price_per_million = forms.DecimalField(required=False, min_value=0, max_digits=12, decimal_places=4,
                                                 help_text=_("Price per million prompt tokens; blank: no cost"))
    output_price_per_million = forms.DecimalField(required=False, min_value=0, max_digits=12, decimal_places=4,
                                                  help_text=_("Price per million completion tokens"))
    max_concurrent_requests = forms.IntegerField(required=False, min_value=1,
                                                 help_text=_("Calls to the model at once, all workers; blank: no limit"))
    requests_per_minute = forms.IntegerField(required=False, min_value=1,
                                             help_text=_("Calls started per minute; blank: no limit"))
    tokens_per_minute = forms.IntegerField(required=False, min_value=1,
                                           help_text=_("Prompt + completion tokens per minute; blank: no limit"))

    def values(self) -> dict:
        data = dict(self.cleaned_data)
        for key in ("backend_settings", "generation"):
            data[key] = {} if data[key] in (None, "") else data[key]
        return data


class NewModelForm(ModelForm):
    name = forms.CharField(max_length=64, help_text=_("Slug used in URLs, queues and exports: e.g. gpt-4o"))
    field_order = ["name", "display_name", "backend", "backend_settings", "generation", "queue"]


@admin_required
def models_page(request):
    form = NewModelForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            config = services.model_create(**form.values())
        except InvalidFields as error:
            form_add_problems(form, error)
        else:
            messages.success(request, gettext("Model %(name)s created. Test it before importing a batch.") % {"name": config.name})
            return redirect("model-edit", name=config.name)
    return render(request, "annotate/models/models.html",
                  {"form": form, "configs": model_configs_list()}, status=400 if form.errors else 200)


def _config_or_404(name: str) -> ModelConfig:
    try:
        return model_config_get(name)
    except NotFound as error:
        raise Http404(error.message) from None


@admin_required
def model_edit_page(request, name: str):
    config = _config_or_404(name)
    initial = {key: getattr(config, key) for key in ModelForm.base_fields}
    form = ModelForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            services.model_update(config=config, **form.values())
        except InvalidFields as error:
            form_add_problems(form, error)
        else:
            messages.success(request, gettext("Model %(name)s saved.") % {"name": config.name})
            return redirect("model-edit", name=config.name)
    checks = Job.objects.filter(kind=Job.Kind.MODEL_CHECK, params__model_config_id=config.pk)[:5]
    return render(request, "annotate/models/edit.html",
                  {"form": form, "config": config, "checks": checks,
                   "settings_json": json.dumps(config.backend_settings, indent=2)},
                  status=400 if form.errors else 200)


@require_POST
@admin_required
def model_retire_view(request, name: str):
    config = services.model_retire(config=_config_or_404(name))
    messages.success(request, gettext("Model %(name)s is retired: its sessions are kept; it is no longer offered.") % {"name": config.name})
    return redirect("model-edit", name=config.name)


@require_POST
@admin_required
def model_restore_view(request, name: str):
    config = services.model_update(config=_config_or_404(name), is_active=True)
    messages.success(request, gettext("Model %(name)s is active again.") % {"name": config.name})
    return redirect("model-edit", name=config.name)


@require_POST
@admin_required
def model_test_view(request, name: str):
    config = _config_or_404(name)
    job = model_config_check(config=config, created_by=request.user, with_image=request.POST.get("image") != "0")
    return redirect("model-check", job_id=job.pk)


@admin_required
def model_check_page(request, job_id: int):
    job = get_object_or_404(Job, pk=job_id, kind=Job.Kind.MODEL_CHECK)
    config = ModelConfig.objects.filter(pk=job.params.get("model_config_id")).first()
    return render(request, "annotate/models/check.html",
                  {"job": job, "config": config, "report": job.report or {}, "done": job_is_finished(job),
                   "hint": job_hint(job)})
