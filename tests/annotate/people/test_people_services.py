"""People services: bulk accounts (all or nothing, errors by line and field), set-password links that work once,
deactivation that keeps the work, API tokens issued once and revoked."""

from __future__ import annotations

import pytest
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.tokens import default_token_generator
from django.test import Client
from rest_framework.authtoken.models import Token

from annotate.errors import ApplicationError, InvalidFields
from annotate.models import User
from annotate.people.rows import person_rows_from_csv, person_rows_from_data
from annotate.people.services import (
    PersonRow,
    token_issue,
    token_revoke,
    user_deactivate,
    user_set_password_link,
    users_create_bulk,
)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

CSV = "username,email,first_name\nalice,alice@lab.org,Alice\nbob,,Bob\n"


def test_bulk_create_from_csv_with_unusable_passwords_and_links():
    created = users_create_bulk(rows=person_rows_from_csv(CSV), role="annotator")
    assert [c.user.username for c in created] == ["alice", "bob"]
    alice = User.objects.get(username="alice")
    assert (alice.email, alice.first_name, alice.role, alice.is_active) == ("alice@lab.org", "Alice", "annotator",
                                                                           True)
    assert not alice.has_usable_password()
    assert created[0].set_password_path.startswith("/set-password/")
    assert alice.pseudonym.startswith("ann-")


def test_the_set_password_link_works_once():
    created = users_create_bulk(rows=[PersonRow(where="users[0]", username="rita")], role="researcher")[0]
    client = Client()
    form_page = client.get(created.set_password_path, follow=True)
    assert form_page.status_code == 200 and b"new_password1" in form_page.content
    done = client.post(form_page.redirect_chain[-1][0],
                       {"new_password1": "correct horse 42", "new_password2": "correct horse 42"})
    assert done.status_code == 302
    assert User.objects.get(username="rita").check_password("correct horse 42")
    again = Client().get(created.set_password_path, follow=True)
    assert b"new_password1" not in again.content and b"no longer valid" in again.content
    assert ModelBackend().authenticate(None, username="rita", password="correct horse 42") is not None


@pytest.mark.parametrize(("csv_text", "where", "words"), [
    ("username\nalice\nAlice\n", "line 3, username", "'Alice' is also on line 2"),
    ("username\nfine\nal ice\n", "line 3, username", "no spaces"),
    ("username,email\nfine,\nalice,not-an-address\n", "line 3, email", "not an e-mail address"),
    ("username,email\nfine,\n,a@b.org\n", "line 3, username", "is empty"),
    ("username\nfine\n" + "x" * 151 + "\n", "line 3, username", "longer than 150"),
])
def test_bad_rows_name_the_line_and_field_and_create_nobody(csv_text, where, words):
    with pytest.raises(InvalidFields) as caught:
        users_create_bulk(rows=person_rows_from_csv(csv_text), role="annotator")
    problems = dict(caught.value.problems)
    assert words in problems[where], problems
    assert f"{where}: " in caught.value.message
    assert not User.objects.exists()


def test_an_existing_account_is_named_and_nothing_is_created():
    UserFactory(username="Alice")
    with pytest.raises(InvalidFields) as caught:
        users_create_bulk(rows=person_rows_from_csv(CSV), role="annotator")
    assert dict(caught.value.problems) == {"line 2, username": "an account 'Alice' already exists"}
    assert list(User.objects.values_list("username", flat=True)) == ["Alice"]


@pytest.mark.parametrize(("csv_text", "where", "words"), [
    ("name,email\nalice,a@b.org\n", "line 1", "must name a username column"),
    ("username,phone\nalice,123\n", "line 1", "unknown column(s) 'phone'"),
    ("username,username\nalice,bob\n", "line 1", "named twice: username"),
    ("username\nalice,extra\n", "line 2", "2 values for 1 columns"),
    ("", "line 1", "got nothing"),
])
def test_bad_csv_shapes(csv_text, where, words):
    with pytest.raises(InvalidFields) as caught:
        person_rows_from_csv(csv_text)
    assert words in dict(caught.value.problems)[where]


def test_csv_bytes_with_bom_and_blank_lines_and_bad_encoding():
    rows = person_rows_from_csv("\ufeffUsername , Email\r\n\r\nalice , a@b.org\r\n".encode())
    assert rows == [PersonRow(where="line 3", username="alice", email="a@b.org")]
    with pytest.raises(InvalidFields) as caught:
        person_rows_from_csv(b"username\n\xff\xfe\n")
    assert "is not UTF-8" in dict(caught.value.problems)["file"]


def test_role_and_empty_list_are_checked():
    with pytest.raises(InvalidFields) as caught:
        users_create_bulk(rows=[], role="student")
    problems = dict(caught.value.problems)
    assert "unknown role 'student'" in problems["role"] and "no people given" in problems["users"]


def test_api_rows_are_named_by_index_and_unknown_keys_are_refused():
    rows = person_rows_from_data([{"username": "a"}, {"username": "b", "password": "x"}])
    with pytest.raises(InvalidFields) as caught:
        users_create_bulk(rows=rows, role="annotator")
    assert dict(caught.value.problems) == {
        "users[1], password": "unknown field; use username, email, first_name, last_name"}


def test_deactivate_keeps_the_account_and_drops_its_token():
    admin = UserFactory(username="root", role=User.Role.ADMIN)
    alice = UserFactory(username="alice")
    token_issue(user=alice)
    user_deactivate(user=alice, by=admin)
    alice.refresh_from_db()
    assert alice.is_active is False and User.objects.filter(username="alice").exists()
    assert not Token.objects.filter(user=alice).exists()
    assert ModelBackend().authenticate(None, username="alice", password="pw-for-tests") is None
    with pytest.raises(ApplicationError, match="deactivated"):
        user_set_password_link(user=alice)
    with pytest.raises(ApplicationError, match="your own account"):
        user_deactivate(user=admin, by=admin)


def test_a_link_for_a_deactivated_account_does_not_open():
    alice = UserFactory(username="alice")
    path = user_set_password_link(user=alice)
    user_deactivate(user=alice)
    page = Client().get(path, follow=True)
    assert b"new_password1" not in page.content


def test_token_issue_replaces_and_revoke_deletes():
    alice = UserFactory(username="alice")
    first = token_issue(user=alice)
    second = token_issue(user=alice)
    assert first != second and len(second) == 40
    assert list(Token.objects.filter(user=alice).values_list("key", flat=True)) == [second]
    api = Client()
    refused = api.get("/api/next/", HTTP_AUTHORIZATION=f"Token {first}")
    assert refused.status_code in (401, 403) and refused.json()["detail"] == "Invalid token."
    assert token_revoke(user=alice) is True and token_revoke(user=alice) is False
    assert not Token.objects.exists()


def test_link_token_is_djangos_own():
    alice = UserFactory(username="alice")
    path = user_set_password_link(user=alice)
    token = path.rstrip("/").rsplit("/", 1)[1]
    assert default_token_generator.check_token(alice, token)
