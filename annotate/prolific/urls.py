"""The Prolific study's pages and API (included by annotate.config.urls)."""

from django.urls import path

from annotate.prolific import apis, views

urlpatterns = [
    path("research/batches/<int:batch_id>/prolific/check/", views.prolific_check_page, name="research-prolific-check"),
    path("research/batches/<int:batch_id>/prolific/create/", views.prolific_create_page,
         name="research-prolific-create"),
    path("research/batches/<int:batch_id>/prolific/study/", views.prolific_study_page, name="research-prolific-study"),
    path("research/batches/<int:batch_id>/prolific/pay/", views.prolific_pay_page, name="research-prolific-pay"),
    path("api/batches/<int:batch_id>/prolific/", apis.ProlificStudyApi.as_view(), name="api-prolific-study"),
    path("api/batches/<int:batch_id>/prolific/actions/", apis.ProlificStudyActionApi.as_view(),
         name="api-prolific-actions"),
    path("api/batches/<int:batch_id>/prolific/decisions/", apis.ProlificDecisionsApi.as_view(),
         name="api-prolific-decisions"),
    path("api/batches/<int:batch_id>/prolific/bonuses/", apis.ProlificBonusesApi.as_view(),
         name="api-prolific-bonuses"),
]
