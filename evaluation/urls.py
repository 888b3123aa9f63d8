"""Researcher pages, mounted at /research/."""

from django.urls import path

from evaluation import views

urlpatterns = [
    path("", views.researcher_home, name="researcher-home"),
    path("batches/<int:batch_id>/", views.batch_report, name="research-report"),
    path("batches/<int:batch_id>/recompute/", views.batch_recompute, name="research-recompute"),
    path("batches/<int:batch_id>/export/<str:name>.<str:fmt>", views.batch_export, name="research-export"),
    path("batches/<int:batch_id>/sessions/", views.session_list, name="research-sessions"),
    path("batches/<int:batch_id>/sessions/<int:session_id>/", views.session_detail, name="research-session"),
    # Sessions export as a background job (evaluation/export_jobs.py).
    path("batches/<int:batch_id>/exports/sessions/", views.batch_sessions_export_job,
         name="research-sessions-export"),
    path("batches/<int:batch_id>/exports/<int:job_id>/", views.batch_export_job, name="research-export-job"),
]

# Preference batches: the pairwise report page and its downloads (evaluation/preference_views.py).
from evaluation import preference_views  # noqa: E402

urlpatterns += [
    path("batches/<int:batch_id>/preferences/", preference_views.preference_report_page, name="research-preferences"),
    path("batches/<int:batch_id>/preferences/<str:name>.<str:fmt>", preference_views.preference_export_download,
         name="research-preference-export"),
]
