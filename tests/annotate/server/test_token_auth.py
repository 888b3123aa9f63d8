"""API tokens checked with a compiled read (annotate.server.token_auth): the same answers as DRF's own class, on
PostgreSQL and elsewhere (403, not 401: the session authentication listed first gives no WWW-Authenticate header)."""

import pytest
from django.test import override_settings
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


@pytest.fixture(params=[True, False], ids=["compiled", "orm"])
def compiled(request):
    with override_settings(COMPILED_READS=request.param):
        yield


def client_with(key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


@pytest.mark.usefixtures("compiled")
def test_a_token_signs_its_user_in(annotator):
    response = client_with(Token.objects.create(user=annotator).key).get(reverse("api-study"))
    assert response.status_code != 401
    assert response.wsgi_request.user == annotator


@pytest.mark.usefixtures("compiled")
def test_an_unknown_token_is_refused_by_name():
    response = client_with("0" * 40).post(reverse("api-next"), {}, format="json")
    assert response.status_code == 403 and response.json()["detail"] == "Invalid token."


@pytest.mark.usefixtures("compiled")
def test_the_token_of_a_deactivated_user_is_refused(annotator):
    key = Token.objects.create(user=annotator).key
    annotator.is_active = False
    annotator.save()
    response = client_with(key).post(reverse("api-next"), {}, format="json")
    assert response.status_code == 403 and response.json()["detail"] == "User inactive or deleted."
