from django.urls import path

from evaluation import views

urlpatterns = [
    path("", views.researcher_home, name="researcher-home"),
]
