"""manage.py users and manage.py token: the same services, errors by line and field, nothing half-written."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.tokens import default_token_generator
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token

from annotate.models import User
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_users_add_from_csv_prints_each_link_once(tmp_path):
    people = tmp_path / "people.csv"
    people.write_text("username,email\nalice,alice@lab.org\nbob,\n")
    out = run("users", "add", "--role", "annotator", "--from", str(people), "--base-url", "https://lab.example/")
    lines = [line for line in out.splitlines() if line.startswith(("alice", "bob"))]
    assert [line.split("\t")[0] for line in lines] == ["alice", "bob"]
    link = lines[0].split("\t")[2]
    assert link.startswith("https://lab.example/set-password/")
    alice = User.objects.get(username="alice")
    assert alice.role == "annotator" and not alice.has_usable_password()
    assert default_token_generator.check_token(alice, link.rstrip("/").rsplit("/", 1)[1])


def test_users_add_refuses_the_whole_file_naming_line_and_field(tmp_path):
    people = tmp_path / "people.csv"
    people.write_text("username,email\nalice,alice@lab.org\nbob,not-mail\nalice,\n")
    with pytest.raises(CommandError) as caught:
        run("users", "add", "--role", "researcher", "--from", str(people))
    message = str(caught.value)
    assert "nothing was created" in message
    assert "line 3, email: 'not-mail' is not an e-mail address" in message
    assert "line 4, username: 'alice' is also on line 2" in message
    assert not User.objects.exists()


def test_users_add_missing_file_and_bad_role(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        run("users", "add", "--role", "annotator", "--from", str(tmp_path / "none.csv"))
    with pytest.raises(CommandError, match="invalid choice: 'student'"):
        run("users", "add", "--role", "student", "--from", str(tmp_path / "none.csv"))


def test_users_list_deactivate_reactivate_and_link():
    alice = UserFactory(username="alice")
    Token.objects.create(user=alice)
    assert "alice\tannotator\t" in run("users", "list", "--role", "annotator")
    with pytest.raises(CommandError, match="No account named 'nobody'"):
        run("users", "deactivate", "alice", "nobody")
    assert User.objects.get(username="alice").is_active  # one unknown name: nobody is changed
    assert "Deactivated alice" in run("users", "deactivate", "alice")
    assert not User.objects.get(username="alice").is_active and not Token.objects.exists()
    assert "deactivated" in run("users", "list")
    with pytest.raises(CommandError, match="deactivated"):
        run("users", "link", "alice")
    run("users", "reactivate", "alice")
    assert "/set-password/" in run("users", "link", "alice")


def test_token_issue_prints_only_the_key_and_revoke_deletes_it():
    alice = UserFactory(username="alice")
    key = run("token", "issue", "alice").strip()
    assert Token.objects.get(user=alice).key == key and len(key) == 40
    assert "Revoked" in run("token", "revoke", "alice")
    assert "had no API token" in run("token", "revoke", "alice")
    with pytest.raises(CommandError, match="No account named 'bob'"):
        run("token", "issue", "bob")
