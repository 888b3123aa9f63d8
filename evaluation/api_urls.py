"""Researcher API routes (mounted under /api/)."""

from django.urls import path

from evaluation.bench import apis as bench_apis
from evaluation.exports import apis as export_apis
from evaluation.interfeedback import apis
from evaluation.participants import apis as participant_apis
from evaluation.preference import apis as preference_apis

urlpatterns = [
    path("batches/", apis.BatchListApi.as_view(), name="api-batches"),
    path("bench-runs/<int:run_id>/table.<str:fmt>", bench_apis.BenchRunTableApi.as_view(), name="api-bench-run-table"),
    path("batches/<int:batch_id>/report/", apis.BatchReportApi.as_view(), name="api-batch-report"),
    path("batches/<int:batch_id>/tables/<str:name>.<str:fmt>", export_apis.BatchTableExportApi.as_view(),
         name="api-batch-table"),
    path("batches/<int:batch_id>/sessions/", apis.BatchSessionListApi.as_view(), name="api-batch-sessions"),
    path("batches/<int:batch_id>/sessions.jsonl", export_apis.BatchSessionExportApi.as_view(),
         name="api-batch-sessions-jsonl"),
    path("batches/<int:batch_id>/sessions.fire.jsonl", export_apis.BatchSessionFireExportApi.as_view(),
         name="api-batch-sessions-fire"),
    path("batches/<int:batch_id>/recompute/", apis.BatchRecomputeApi.as_view(), name="api-batch-recompute"),
    path("batches/<int:batch_id>/jobs/<int:job_id>/", apis.BatchJobApi.as_view(), name="api-batch-job"),
    # Sessions export as a background job: POST -> 202 with the job (poll /api/jobs/<id>/), then its file.
    path("batches/<int:batch_id>/exports/sessions/", export_apis.BatchSessionsExportJobApi.as_view(),
         name="api-batch-sessions-export"),
    path("batches/<int:batch_id>/exports/bundle/", export_apis.BatchBundleExportJobApi.as_view(),
         name="api-batch-bundle-export"),
    path("batches/<int:batch_id>/exports/<int:job_id>/download/", export_apis.BatchExportDownloadApi.as_view(),
         name="api-batch-export-download"),
    # invited participants: the table with every decision, decisions, returns
    path("batches/<int:batch_id>/participants/", participant_apis.BatchParticipantsApi.as_view(),
         name="api-batch-participants"),
    path("batches/<int:batch_id>/participants/decisions/", participant_apis.BatchParticipantDecisionsApi.as_view(),
         name="api-batch-participant-decisions"),
    path("batches/<int:batch_id>/participants/returned/", participant_apis.BatchParticipantsReturnedApi.as_view(),
         name="api-batch-participants-returned"),
    # preference batches: the pairwise report as JSON and its tables as files
    path("batches/<int:batch_id>/preferences/", preference_apis.BatchPreferenceReportApi.as_view(),
         name="api-batch-preferences"),
    path("batches/<int:batch_id>/preferences/<str:name>.<str:fmt>", preference_apis.BatchPreferenceTableApi.as_view(),
         name="api-batch-preference-table"),
]
