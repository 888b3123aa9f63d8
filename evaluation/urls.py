"""Researcher pages, mounted at /research/."""

from django.urls import path

from evaluation.bench import views as bench_views
from evaluation.exports import views as export_views
from evaluation.fire import views as fire_views
from evaluation.interfeedback import views
from evaluation.participants import views as participant_views
from evaluation.preference import views as preference_views
from evaluation.quality import views as quality_views

urlpatterns = [
    path("", views.researcher_home, name="researcher-home"),
    # InterFeedback-Bench runs: start, watch, cancel, resume; Tables 1/2
    path("bench/", bench_views.bench_runs_page, name="bench-runs-page"),
    path("bench/<int:run_id>/", bench_views.bench_run_page, name="bench-run-page"),
    path("bench/<int:run_id>/compare/", bench_views.bench_compare_page, name="bench-compare-page"),
    path("bench/<int:run_id>/prompts.json", bench_views.bench_run_prompts, name="bench-run-prompts"),
    path("bench/<int:run_id>/table.<str:fmt>", bench_views.bench_run_table_download, name="bench-run-table"),
    path("bench/<int:run_id>/compare.<str:fmt>", bench_views.bench_compare_download, name="bench-compare-download"),
    path("bench/<int:run_id>/<str:action>/", bench_views.bench_run_action, name="bench-run-action"),
    path("batches/<int:batch_id>/", views.batch_report, name="research-report"),
    path("batches/<int:batch_id>/recompute/", views.batch_recompute, name="research-recompute"),
    path("batches/<int:batch_id>/export/<str:name>.<str:fmt>", export_views.batch_export, name="research-export"),
    path("batches/<int:batch_id>/fire/<str:what>.<str:fmt>", fire_views.batch_fire_export, name="research-fire-export"),
    path("batches/<int:batch_id>/sessions/", views.session_list, name="research-sessions"),
    path("batches/<int:batch_id>/sessions/<int:session_id>/", views.session_detail, name="research-session"),
    # Sessions export as a background job (evaluation/exports/jobs.py).
    path("batches/<int:batch_id>/exports/sessions/", export_views.batch_sessions_export_job,
         name="research-sessions-export"),
    path("batches/<int:batch_id>/exports/bundle/", export_views.batch_bundle_export_job, name="research-bundle-export"),
    path("batches/<int:batch_id>/exports/<int:job_id>/", export_views.batch_export_job, name="research-export-job"),
    # per-annotator quality of a batch
    path("batches/<int:batch_id>/quality/", quality_views.batch_quality_page, name="research-quality"),
    # invited participants: the table, decisions, returns
    path("batches/<int:batch_id>/participants/", participant_views.participants_page, name="research-participants"),
    path("batches/<int:batch_id>/participants/decide/", participant_views.participants_decide_page,
         name="research-participants-decide"),
    # preference batches: the pairwise report page and its downloads
    path("batches/<int:batch_id>/preferences/", preference_views.preference_report_page, name="research-preferences"),
    path("batches/<int:batch_id>/preferences/<str:name>.<str:fmt>", preference_views.preference_export_download,
         name="research-preference-export"),
]
