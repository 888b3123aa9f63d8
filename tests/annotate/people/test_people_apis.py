"""/api/users/ (admins) and /api/token/ (everyone, their own): permissions, 400 bodies naming row and field."""

from __future__ import annotations

import pytest
from django.contrib.auth.tokens import default_token_generator
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotate.models import User
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_user(db):
    return UserFactory(username="ada", role=User.Role.ADMIN)


def test_admin_creates_people_with_links(api_client, admin_user):
    api_client.force_authenticate(admin_user)
    response = api_client.post("/api/users/", {"role": "annotator", "users": [
        {"username": "alice", "email": "alice@lab.org"}, {"username": "bob"}]}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert [p["username"] for p in body] == ["alice", "bob"]
    assert body[0]["has_password"] is False and body[0]["role"] == "annotator"
    link = body[0]["set_password_url"]
    assert link.startswith("http://testserver/set-password/")
    assert default_token_generator.check_token(User.objects.get(username="alice"), link.rstrip("/").rsplit("/")[-1])


@pytest.mark.parametrize(("body", "field", "words"), [
    ({"role": "annotator", "users": [{"username": "a"}, {"username": "a b"}]}, "users[1], username", "no spaces"),
    ({"role": "annotator", "users": [{"username": "a", "email": "x"}]}, "users[0], email", "not an e-mail"),
    ({"role": "annotator", "users": [{"username": "a", "is_superuser": "1"}]}, "users[0], is_superuser",
     "unknown field"),
    ({"role": "boss", "users": [{"username": "a"}]}, "role", "not a valid choice"),
    ({"role": "annotator", "users": []}, "users", "may not be empty"),
])
def test_bad_people_are_400_and_nobody_is_created(api_client, admin_user, body, field, words):
    api_client.force_authenticate(admin_user)
    response = api_client.post("/api/users/", body, format="json")
    assert response.status_code == 400, response.content
    detail = response.json()
    assert field in detail and words in str(detail[field]), detail
    assert list(User.objects.values_list("username", flat=True)) == ["ada"]


@pytest.mark.parametrize("persona", ["researcher", "annotator"])
def test_only_admins_manage_people(api_client, persona, request):
    api_client.force_authenticate(request.getfixturevalue(persona))
    alice = UserFactory(username="alice2")
    assert api_client.get("/api/users/").status_code == 403
    assert api_client.post("/api/users/", {"role": "admin", "users": [{"username": "me2"}]},
                           format="json").status_code == 403
    assert api_client.patch("/api/users/alice2/", {"is_active": False}, format="json").status_code == 403
    assert api_client.post("/api/users/alice2/set-password-link/").status_code == 403
    alice.refresh_from_db()
    assert alice.is_active and not User.objects.filter(username="me2").exists()


def test_deactivate_reactivate_and_new_link(api_client, admin_user, annotator):
    api_client.force_authenticate(admin_user)
    response = api_client.patch(f"/api/users/{annotator.username}/", {"is_active": False}, format="json")
    assert response.status_code == 200 and response.json()["is_active"] is False
    assert api_client.post(f"/api/users/{annotator.username}/set-password-link/").status_code == 400
    api_client.patch(f"/api/users/{annotator.username}/", {"is_active": True}, format="json")
    link = api_client.post(f"/api/users/{annotator.username}/set-password-link/").json()["set_password_url"]
    assert "/set-password/" in link
    own = api_client.patch("/api/users/ada/", {"is_active": False}, format="json")
    assert own.status_code == 400 and "your own account" in own.json()["detail"]
    assert api_client.patch("/api/users/nobody/", {"is_active": False}, format="json").status_code == 404
    assert api_client.patch(f"/api/users/{annotator.username}/", {}, format="json").json()["is_active"] == [
        "This field is required."]
    listed = api_client.get("/api/users/?role=annotator").json()
    assert [p["username"] for p in listed] == [annotator.username]


def test_every_user_manages_their_own_token(annotator):
    client = APIClient()
    client.force_authenticate(annotator)
    assert client.get("/api/token/").json() == {"exists": False, "created": None}
    issued = client.post("/api/token/")
    assert issued.status_code == 201 and issued["Cache-Control"] == "no-store"
    key = issued.json()["key"]
    assert Token.objects.get(user=annotator).key == key
    assert client.get("/api/token/").json()["exists"] is True
    with_token = APIClient()
    assert with_token.get("/api/token/", HTTP_AUTHORIZATION=f"Token {key}").json()["exists"] is True
    assert client.delete("/api/token/").status_code == 204
    assert not Token.objects.exists()
    assert with_token.get("/api/token/", HTTP_AUTHORIZATION=f"Token {key}").status_code in (401, 403)
    assert APIClient().post("/api/token/").status_code in (401, 403)
