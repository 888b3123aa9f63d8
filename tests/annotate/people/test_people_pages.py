"""The People page (admins), the API token page (everyone) and the set-password page, with the Django test client."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.authtoken.models import Token

from annotate.models import User
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_bulk_add_from_pasted_csv_shows_links_once(admin_client):
    page = admin_client.get("/setup/people/")
    assert page.status_code == 200 and b'<label for="id_role">' in page.content
    response = admin_client.post("/setup/people/", {"role": "researcher", "text": "username,email\nrita,r@lab.org\n"})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    assert b"/set-password/" in response.content and b"shown only on this page" in response.content
    assert User.objects.get(username="rita").role == "researcher"
    assert b"/set-password/" not in admin_client.get("/setup/people/").content


def test_bulk_add_from_a_file(admin_client):
    upload = SimpleUploadedFile("people.csv", b"username\nann1\nann2\n", content_type="text/csv")
    response = admin_client.post("/setup/people/", {"role": "annotator", "file": upload})
    assert response.status_code == 200 and response.content.count(b"<code>http://testserver/set-password/") == 2


def test_errors_show_beside_the_form_and_nothing_is_created(admin_client):
    response = admin_client.post("/setup/people/", {"role": "annotator", "text": "username,email\nok,\nbad name,\n"})
    assert response.status_code == 400
    assert b"line 3, username: &#x27;bad name&#x27; may hold only letters" in response.content
    assert b'role="alert"' in response.content
    assert not User.objects.filter(username="ok").exists()
    empty = admin_client.post("/setup/people/", {"role": "annotator"})
    assert empty.status_code == 400 and b"Choose a CSV file or paste the CSV text." in empty.content


def test_deactivate_reactivate_and_new_link_buttons(admin_client):
    alice = UserFactory(username="alice")
    assert admin_client.get("/setup/people/alice/deactivate/").status_code == 405
    admin_client.post("/setup/people/alice/deactivate/")
    alice.refresh_from_db()
    assert not alice.is_active
    admin_client.post("/setup/people/alice/reactivate/")
    alice.refresh_from_db()
    assert alice.is_active
    link_page = admin_client.post("/setup/people/alice/link/")
    assert b"A new set-password link" in link_page.content and b"/set-password/" in link_page.content
    assert admin_client.post("/setup/people/nobody/link/").status_code == 404
    own = admin_client.post("/setup/people/ada/deactivate/", follow=True)
    assert b"You cannot deactivate your own account" in own.content
    assert User.objects.get(username="ada").is_active


@pytest.mark.parametrize("persona", ["researcher", "annotator"])
def test_people_page_is_for_admins(persona, request):
    client = Client()
    client.force_login(request.getfixturevalue(persona))
    assert client.get("/setup/people/").status_code == 403
    assert client.post("/setup/people/", {"role": "admin", "text": "username\nmole\n"}).status_code == 403
    assert not User.objects.filter(username="mole").exists()
    assert Client().get("/setup/people/").status_code == 302  # to the login page


def test_token_page_creates_shows_once_and_revokes(annotator):
    client = Client()
    client.force_login(annotator)
    assert b"You have no API token" in client.get("/account/token/").content
    created = client.post("/account/token/", {"action": "issue"})
    key = Token.objects.get(user=annotator).key
    assert key.encode() in created.content and created["Cache-Control"] == "no-store"
    again = client.get("/account/token/")
    assert key.encode() not in again.content and b"It is not shown again" in again.content
    client.post("/account/token/", {"action": "revoke"})
    assert not Token.objects.exists()
    assert Client().get("/account/token/").status_code == 302


def test_set_password_page_validates_the_password():
    from annotate.people.services import set_password_path

    user = UserFactory(username="newbie")
    user.set_unusable_password()
    user.save()
    client = Client()
    form_page = client.get(set_password_path(user), follow=True)
    url = form_page.redirect_chain[-1][0]
    short = client.post(url, {"new_password1": "abc", "new_password2": "abc"})
    assert short.status_code == 200 and b"too short" in short.content
    done = client.post(url, {"new_password1": "a long pass phrase", "new_password2": "a long pass phrase"},
                       follow=True)
    assert b"Your password is set" in done.content
