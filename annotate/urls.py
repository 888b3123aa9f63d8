from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotate import apis, apis_fire, apis_import, apis_models, views, views_fire, views_import

api_patterns = [
    path("next/", apis.NextItemApi.as_view(), name="api-next"),
    path("sessions/<int:session_id>/", apis.SessionDetailApi.as_view(), name="api-session"),
    path("sessions/<int:session_id>/feedback/", apis.SessionFeedbackApi.as_view(), name="api-session-feedback"),
    path("sessions/<int:session_id>/draft/", apis.SessionDraftApi.as_view(), name="api-session-draft"),
    path("sessions/<int:session_id>/retry/", apis.SessionRetryApi.as_view(), name="api-session-retry"),
    path("sessions/<int:session_id>/verdict/", apis.SessionVerdictApi.as_view(), name="api-session-verdict"),
    path("sessions/<int:session_id>/heartbeat/", apis.SessionHeartbeatApi.as_view(), name="api-session-heartbeat"),
    path("sessions/<int:session_id>/skip/", apis.SessionSkipApi.as_view(), name="api-session-skip"),
    path("conversations/<int:conversation_id>/", apis_fire.ConversationDetailApi.as_view(), name="api-conversation"),
    path("conversations/<int:conversation_id>/ratings/", apis_fire.ConversationRatingsApi.as_view(),
         name="api-conversation-ratings"),
    path("conversations/<int:conversation_id>/preferences/", apis_fire.ConversationPreferencesApi.as_view(),
         name="api-conversation-preferences"),
    path("conversations/<int:conversation_id>/heartbeat/", apis_fire.ConversationHeartbeatApi.as_view(),
         name="api-conversation-heartbeat"),
    path("conversations/<int:conversation_id>/skip/", apis_fire.ConversationSkipApi.as_view(),
         name="api-conversation-skip"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("evaluation.api_urls")),
    path("imports/", apis_import.ImportCreateApi.as_view(), name="api-imports"),
    path("imports/<int:job_id>/", apis_import.ImportJobApi.as_view(), name="api-import-job"),
]
# Model configs, "test this model" and job status (annotate/apis_models.py).
api_patterns += [
    path("models/", apis_models.ModelListApi.as_view(), name="api-models"),
    path("models/<slug:name>/check/", apis_models.ModelCheckApi.as_view(), name="api-model-check"),
    path("jobs/<int:job_id>/", apis_models.JobDetailApi.as_view(), name="api-job"),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(template_name="registration/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("annotate/next/", views.next_item, name="next-item"),
    path("annotate/sessions/<int:session_id>/", views.session_page, name="session-page"),
    path("annotate/conversations/<int:conversation_id>/", views_fire.fire_rate_page, name="fire-rate"),
    path("annotate/conversations/<int:conversation_id>/image", views_fire.conversation_image,
         name="conversation-image"),
    path("annotate/conversations/<int:conversation_id>/skip/", views_fire.fire_skip, name="fire-skip"),
    path("media-task/<str:sha256>", views.task_image, name="task-image"),
    path("research/", include("evaluation.urls")),
    path("api/", include(api_patterns)),
    path("admin/", admin.site.urls),
    path("imports/new/", views_import.import_new, name="import-new"),
    path("imports/<int:job_id>/", views_import.import_job_page, name="import-job"),
]

# Verdict review (apis_review.py), per-annotator quality page (views_quality.py), crowd entry (views_crowd.py).
from annotate import apis_review, views_crowd, views_quality  # noqa: E402

api_patterns += [
    path("rounds/<int:round_id>/verdict-override/", apis_review.RoundVerdictOverrideApi.as_view(),
         name="api-round-verdict-override"),
    path("rounds/<int:round_id>/overrides/", apis_review.RoundOverridesApi.as_view(), name="api-round-overrides"),
]
urlpatterns += [
    path("research/batches/<int:batch_id>/quality/", views_quality.batch_quality_page, name="research-quality"),
    path("join/<str:token>/", views_crowd.join, name="crowd-join"),
    path("done/", views_crowd.done, name="crowd-done"),
]
