"""Researcher pages of InterFeedback-Bench: the runs (start one), and a run's live progress and Tables 1/2."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotate.bench import selectors as bench_selectors
from annotate.bench import services as bench_services
from annotate.errors import ApplicationError
from annotate.models import Batch, BenchRun, ModelConfig, Round
from annotate.people.access import researcher_required
from annotate.server.throttles import job_creation_wait
from annotate.server.version import stamp
from evaluation.bench.apis import run_table_response
from evaluation.bench.tables import comparison_tables, run_table
from evaluation.exports.registry import render_tables
from evaluation.exports.renderers.html import html_table
from evaluation.fire.runs import fire_run_tables


class BenchRunForm(forms.Form):
    protocol = forms.ChoiceField(choices=BenchRun.Protocol.choices, initial=BenchRun.Protocol.INTERFEEDBACK,
                                 required=False)
    batch = forms.ModelChoiceField(queryset=Batch.objects.none(),
                                   help_text="An InterFeedback batch (bench) or an imported FIRE batch (FIRE runs)")
    receivers = forms.ModelMultipleChoiceField(queryset=ModelConfig.objects.filter(is_active=True).order_by("name"),
                                               widget=forms.CheckboxSelectMultiple, to_field_name="name",
                                               required=False, label="Receivers / students",
                                               help_text="Models that answer and are corrected (FIRE: the students)")
    providers = forms.ModelMultipleChoiceField(queryset=ModelConfig.objects.filter(is_active=True).order_by("name"),
                                               widget=forms.CheckboxSelectMultiple, to_field_name="name",
                                               required=False, label="Providers / teachers",
                                               help_text="Models that give feedback (FIRE: the teachers)")
    human_session = forms.IntegerField(required=False, min_value=1, label="Or replay a human session",
                                       help_text="A session id: its person's feedback goes to the receivers instead")
    feedback = forms.MultipleChoiceField(choices=BenchRun.Feedback.choices, initial=["detail", "simple"],
                                         widget=forms.CheckboxSelectMultiple)
    rounds = forms.IntegerField(min_value=1, max_value=10, initial=3)
    lanes = forms.IntegerField(min_value=1, max_value=bench_services.MAX_LANES, initial=4,
                               help_text="Lanes of the run that work at once")
    provider_sees_ground_truth = forms.BooleanField(required=False, label="Providers see the ground truth")
    regenerate_leaks = forms.BooleanField(required=False, initial=True,
                                          label="Ask once more when detail feedback states the answer")
    provider_prompt = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 6}),
                                      label="Provider prompt (detailed feedback)",
                                      help_text="Replaces the default template; it may use {question}, {options}, "
                                                "{attempts} and {reference}, and must use {question} and {attempts}")
    n_max = forms.IntegerField(min_value=1, max_value=20, initial=5, label="FIRE: n_max", required=False,
                               help_text="Turns a free dialogue may take")
    threshold = forms.IntegerField(min_value=0, max_value=10, initial=8, label="FIRE: threshold", required=False,
                                   help_text="A teacher score that ends a free dialogue")
    baseline = forms.CharField(required=False, label="FIRE: baseline student",
                               help_text="The student whose AT is 1 in Table 4 (default: the first)")

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        batches = Batch.objects.filter(kind__in=[Batch.Kind.INTERFEEDBACK, Batch.Kind.FIRE]).order_by("name")
        self.fields["batch"].queryset = batches if user.is_admin_role else batches.filter(members=user)


@researcher_required
def bench_runs_page(request):
    form = BenchRunForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid() and (wait := job_creation_wait(request)):
        form.add_error(None, wait)
    elif request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            if data["protocol"] not in ("", BenchRun.Protocol.INTERFEEDBACK):
                run = bench_services.fire_run_create(
                    batch=data["batch"], protocol=data["protocol"], students=[m.name for m in data["receivers"]],
                    teachers=[m.name for m in data["providers"]], n_max=data["n_max"] or 5,
                    threshold=data["threshold"] if data["threshold"] is not None else 8,
                    baseline=data["baseline"], lanes=data["lanes"], created_by=request.user)
                messages.success(request, f"Run {run.pk} started.")
                return redirect("bench-run-page", run.pk)
            run = bench_services.bench_run_create(
                batch=data["batch"], receivers=[m.name for m in data["receivers"]],
                providers=[m.name for m in data["providers"]], feedback=data["feedback"], rounds=data["rounds"],
                lanes=data["lanes"], provider_sees_ground_truth=data["provider_sees_ground_truth"],
                regenerate_leaks=data["regenerate_leaks"], provider_prompt=data["provider_prompt"] or None,
                human_session_id=data["human_session"], created_by=request.user)
        except ApplicationError as error:
            form.add_error(None, error.message)
        else:
            messages.success(request, f"Bench run {run.pk} started.")
            return redirect("bench-run-page", run.pk)
    runs = bench_selectors.readable_runs(request.user)[:50]
    return render(request, "evaluation/bench_runs.html", {"form": form, "runs": runs})


@researcher_required
def bench_run_page(request, run_id: int):
    run = bench_selectors.readable_run(request.user, run_id)
    leaks = (Round.objects.filter(session__bench_run=run, leak_flagged=True)
             .select_related("session__task", "session__feedback_provider", "session__model_config")
             .order_by("session__feedback_provider__name", "session_id", "index"))
    leak_counts: dict[str, int] = {}
    for rnd in leaks:
        leak_counts[rnd.session.feedback_provider.label] = leak_counts.get(rnd.session.feedback_provider.label, 0) + 1
    done = run.status == BenchRun.Status.DONE
    fire = run.protocol != BenchRun.Protocol.INTERFEEDBACK
    table = html_table(run_table(run)) if done and not fire else None
    fire_tables = [html_table(t) for t in fire_run_tables(run)] if done and fire else []
    return render(request, "evaluation/bench_run.html", {
        "run": run, "progress": bench_services.bench_progress(run), "table": table, "fire_tables": fire_tables,
        "human_ratings": _human_ratings(run) if fire else None,
        "receivers": bench_selectors.run_receivers(run), "providers": bench_selectors.run_providers(run),
        "leak_counts": sorted(leak_counts.items()), "leaks": leaks[:50],
    })


def _human_ratings(run: BenchRun) -> dict | None:
    """FIRE Table A1 of the same conversations (people's ratings), to read beside the models' metrics."""
    from evaluation.fire.reports import fire_ratings_table

    try:
        return html_table(fire_ratings_table(run.batch))
    except ApplicationError:
        return None


@researcher_required
@require_POST
def bench_run_action(request, run_id: int, action: str):
    run = bench_selectors.readable_run(request.user, run_id)
    try:
        if action == "cancel":
            bench_services.bench_run_cancel(run=run)
        elif action == "resume":
            if wait := job_creation_wait(request):
                messages.error(request, wait)
            else:
                bench_services.bench_run_resume(run=run)
    except ApplicationError as error:
        messages.error(request, error.message)
    return redirect("bench-run-page", run.pk)


COMPARISON_FORMATS = {"md": "text/markdown; charset=utf-8", "csv": "text/csv; charset=utf-8",
                      "tex": "application/x-tex; charset=utf-8", "json": "application/json"}


def comparison_text(run: BenchRun, fmt: str) -> str:
    """The three comparison tables in one file: a JSON list, or the tables one after another."""
    return render_tables(comparison_tables(run), fmt)


@researcher_required
def bench_compare_page(request, run_id: int):
    run = bench_selectors.readable_run(request.user, run_id)
    return render(request, "evaluation/bench_compare.html",
                  {"run": run, "tables": [(name, html_table(t)) for name, t in
                                          zip(("compare-rounds", "compare-categories", "compare-mcnemar"),
                                              comparison_tables(run), strict=True)]})


@researcher_required
def bench_compare_download(request, run_id: int, fmt: str):
    if fmt not in COMPARISON_FORMATS:
        raise Http404(f"Unknown format {fmt!r}; expected one of {', '.join(COMPARISON_FORMATS)}.")
    run = bench_selectors.readable_run(request.user, run_id)
    response = HttpResponse(comparison_text(run, fmt), content_type=COMPARISON_FORMATS[fmt])
    response["Content-Disposition"] = f'attachment; filename="bench-run-{run.pk}-human-vs-lmm.{fmt}"'
    return stamp(response)


@researcher_required
def bench_run_table_download(request, run_id: int, fmt: str):
    return run_table_response(bench_selectors.readable_run(request.user, run_id), fmt)


@researcher_required
def bench_run_prompts(request, run_id: int):
    """What each model was told, with the run's settings: a JSON file to publish beside the tables."""
    import json

    run = bench_selectors.readable_run(request.user, run_id)
    body = {"run": run.pk, "batch": run.batch.name,
            "receivers": [m.name for m in bench_selectors.run_receivers(run)],
            "providers": [m.name for m in bench_selectors.run_providers(run)], "feedback_kinds": run.feedback_kinds,
            "max_rounds": run.max_rounds, "provider_sees_ground_truth": run.provider_sees_ground_truth,
            "regenerate_leaks": run.regenerate_leaks, "human_session": run.human_session_id,
            # as stored at the run's start; runs from before that: the models' settings now
            "generation": run.prompts.get("generation") or {
                m.name: {"backend": m.backend, "generation": m.generation}
                for m in [*run.receivers.all(), *run.providers.all()]},
            "prompts": run.prompts}
    response = HttpResponse(json.dumps(body, indent=2, ensure_ascii=False), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="bench-run-{run.pk}-prompts.json"'
    return stamp(response)
