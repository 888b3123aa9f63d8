"""The project's URL table: annotator pages, admin pages, the API. Researcher pages and the researcher API are the
evaluation app's own tables, included by name (annotate never imports evaluation)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotate import i18n
from annotate.bench import apis as bench_apis
from annotate.config.api_root import ApiRootApi
from annotate.crowd import invites, participant_apis, participant_views, study_views
from annotate.crowd import views as crowd_views
from annotate.formats import apis as format_apis
from annotate.imports import apis as import_apis
from annotate.imports import views as import_views
from annotate.jobs import apis as job_apis
from annotate.modelconfigs import apis as model_apis
from annotate.modelconfigs import views as model_views
from annotate.people import apis as people_apis
from annotate.people import views as people_views
from annotate.queue import apis as queue_apis
from annotate.queue import views as queue_views
from annotate.rating import apis as rating_apis
from annotate.rating import views as rating_views
from annotate.review import apis as review_apis
from annotate.sessions import apis as session_apis
from annotate.sessions import views as session_views
from annotate.watch import views as watch_views

api_patterns = [
    # the next-item queue and InterFeedback sessions
    path("next/", queue_apis.NextItemApi.as_view(), name="api-next"),
    path("batches/<int:batch_id>/dashboard/", watch_views.BatchDashboardApi.as_view(), name="api-batch-dashboard"),
    path("sessions/<int:session_id>/", session_apis.SessionDetailApi.as_view(), name="api-session"),
    path("sessions/<int:session_id>/feedback/", session_apis.SessionFeedbackApi.as_view(),
         name="api-session-feedback"),
    path("sessions/<int:session_id>/draft/", session_apis.SessionDraftApi.as_view(), name="api-session-draft"),
    path("sessions/<int:session_id>/retry/", session_apis.SessionRetryApi.as_view(), name="api-session-retry"),
    path("sessions/<int:session_id>/verdict/", session_apis.SessionVerdictApi.as_view(),
         name="api-session-verdict"),
    path("sessions/<int:session_id>/heartbeat/", session_apis.SessionHeartbeatApi.as_view(),
         name="api-session-heartbeat"),
    path("sessions/<int:session_id>/skip/", session_apis.SessionSkipApi.as_view(), name="api-session-skip"),
    # crowd: a batch's invite links
    path("batches/<int:batch_id>/invite-links/", invites.BatchInviteLinksApi.as_view(), name="api-invite-links"),
    path("batches/<int:batch_id>/invite-links/<int:link_id>/revoke/", invites.BatchInviteLinkRevokeApi.as_view(),
         name="api-invite-link-revoke"),
    path("batches/<int:batch_id>/study/", study_views.BatchStudyApi.as_view(), name="api-batch-study"),
    # crowd: an invited participant's study (consent, screening, questionnaires, leaving)
    path("study/", participant_apis.StudyStateApi.as_view(), name="api-study"),
    path("study/consent/", participant_apis.StudyConsentApi.as_view(), name="api-study-consent"),
    path("study/screening/", participant_apis.StudyScreeningApi.as_view(), name="api-study-screening"),
    path("study/surveys/<str:phase>/", participant_apis.StudySurveyApi.as_view(), name="api-study-survey"),
    path("study/return/", participant_apis.StudyReturnApi.as_view(), name="api-study-return"),
    # verdict review
    path("rounds/<int:round_id>/verdict-override/", review_apis.RoundVerdictOverrideApi.as_view(),
         name="api-round-verdict-override"),
    path("rounds/<int:round_id>/overrides/", review_apis.RoundOverridesApi.as_view(), name="api-round-overrides"),
    # FIRE and preference rating
    path("conversations/<int:conversation_id>/", rating_apis.ConversationDetailApi.as_view(),
         name="api-conversation"),
    path("conversations/<int:conversation_id>/ratings/", rating_apis.ConversationRatingsApi.as_view(),
         name="api-conversation-ratings"),
    path("conversations/<int:conversation_id>/preferences/", rating_apis.ConversationPreferencesApi.as_view(),
         name="api-conversation-preferences"),
    path("conversations/<int:conversation_id>/heartbeat/", rating_apis.ConversationHeartbeatApi.as_view(),
         name="api-conversation-heartbeat"),
    path("conversations/<int:conversation_id>/skip/", rating_apis.ConversationSkipApi.as_view(),
         name="api-conversation-skip"),
    # imports, model configs, jobs
    path("imports/", import_apis.ImportCreateApi.as_view(), name="api-imports"),
    path("imports/<int:job_id>/", import_apis.ImportJobApi.as_view(), name="api-import-job"),
    path("models/", model_apis.ModelListApi.as_view(), name="api-models"),
    path("models/<slug:name>/check/", model_apis.ModelCheckApi.as_view(), name="api-model-check"),
    # set up a study: models, people, tokens
    path("models/<slug:name>/", model_apis.ModelDetailApi.as_view(), name="api-model"),
    path("models/<slug:name>/retire/", model_apis.ModelRetireApi.as_view(), name="api-model-retire"),
    path("users/", people_apis.UsersApi.as_view(), name="api-users"),
    path("users/<str:username>/", people_apis.UserDetailApi.as_view(), name="api-user"),
    path("users/<str:username>/set-password-link/", people_apis.UserLinkApi.as_view(), name="api-user-link"),
    path("token/", people_apis.TokenApi.as_view(), name="api-token"),
    path("jobs/<int:job_id>/", job_apis.JobDetailApi.as_view(), name="api-job"),
    # InterFeedback-Bench runs
    path("bench-runs/", bench_apis.BenchRunListApi.as_view(), name="api-bench-runs"),
    path("bench-runs/<int:run_id>/", bench_apis.BenchRunDetailApi.as_view(), name="api-bench-run"),
    path("bench-runs/<int:run_id>/cancel/", bench_apis.BenchRunCancelApi.as_view(), name="api-bench-run-cancel"),
    path("bench-runs/<int:run_id>/resume/", bench_apis.BenchRunResumeApi.as_view(), name="api-bench-run-resume"),
    # the version, the schema and its browsable docs
    path("", ApiRootApi.as_view(), name="api-root"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("schema/formats/", format_apis.FormatSchemasApi.as_view(), name="api-format-schemas"),
    path("schema/formats/<slug:name>.json", format_apis.FormatSchemaApi.as_view(), name="api-format-schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),  # its script as a file (CSP)
    # researchers: batches, reports, exports
    path("", include("evaluation.api_urls")),
]

handler404 = "annotate.errors.page_not_found"  # JSON under /api/

urlpatterns = [
    path("", queue_views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(template_name="registration/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # the language chooser, and the pages' scripts' translations (a plain script src: it passes the CSP)
    path("i18n/language/", i18n.language_set, name="set_language"),
    path("i18n/catalog.js", JavaScriptCatalog.as_view(packages=["annotate"]),  # ours and LOCALE_PATHS, not the admin's
         name="javascript-catalog"),
    # annotators
    path("annotate/next/", queue_views.next_item, name="next-item"),
    path("annotate/sessions/<int:session_id>/", session_views.session_page, name="session-page"),
    path("annotate/conversations/<int:conversation_id>/", rating_views.fire_rate_page, name="fire-rate"),
    path("annotate/conversations/<int:conversation_id>/image", rating_views.conversation_image,
         name="conversation-image"),
    path("annotate/conversations/<int:conversation_id>/skip/", rating_views.fire_skip, name="fire-skip"),
    path("media-task/<str:sha256>", session_views.task_image, name="task-image"),
    # crowd participants
    path("join/<str:token>/", crowd_views.join, name="crowd-join"),
    path("done/", crowd_views.done, name="crowd-done"),
    path("study/", participant_views.study, name="crowd-study"),
    path("study/consent/", participant_views.consent, name="crowd-consent"),
    path("study/screening/", participant_views.screening, name="crowd-screening"),
    path("study/survey/<str:phase>/", participant_views.survey, name="crowd-survey"),
    path("study/leave/", participant_views.leave, name="crowd-leave"),
    # admins
    path("imports/new/", import_views.import_new, name="import-new"),
    path("imports/<int:job_id>/", import_views.import_job_page, name="import-job"),
    # set up a study: models, people, tokens, set-password links
    path("setup/models/", model_views.models_page, name="models"),
    path("setup/models/checks/<int:job_id>/", model_views.model_check_page, name="model-check"),
    path("setup/models/<slug:name>/", model_views.model_edit_page, name="model-edit"),
    path("setup/models/<slug:name>/retire/", model_views.model_retire_view, name="model-retire"),
    path("setup/models/<slug:name>/restore/", model_views.model_restore_view, name="model-restore"),
    path("setup/models/<slug:name>/test/", model_views.model_test_view, name="model-test"),
    path("setup/people/", people_views.people_page, name="people"),
    path("setup/people/links/email/", people_views.people_links_email, name="people-links-email"),
    path("setup/people/<str:username>/deactivate/", people_views.person_deactivate, name="person-deactivate"),
    path("setup/people/<str:username>/reactivate/", people_views.person_reactivate, name="person-reactivate"),
    path("setup/people/<str:username>/link/", people_views.person_link, name="person-link"),
    path("account/token/", people_views.token_page, name="api-token-page"),
    path("set-password/<uidb64>/<token>/", people_views.SetPasswordView.as_view(), name="password-set"),
    path("set-password/done/", people_views.SetPasswordDoneView.as_view(), name="password-set-done"),
    path("admin/", admin.site.urls),
    # researchers
    path("research/batches/<int:batch_id>/dashboard/", watch_views.dashboard_page, name="research-dashboard"),
    path("research/batches/<int:batch_id>/invites/", invites.invite_links_page, name="research-invites"),
    path("research/batches/<int:batch_id>/invites/<int:link_id>/revoke/", invites.invite_link_revoke_page,
         name="research-invite-revoke"),
    path("research/batches/<int:batch_id>/study/", study_views.study_page, name="research-study"),
    path("", include("annotate.prolific.urls")),  # the batch's Prolific study: pages and API
    path("research/", include("evaluation.urls")),
    path("api/", include(api_patterns)),
]
