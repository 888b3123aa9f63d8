"""An admin made as the README says (`manage.py users add --role admin`, the People page, POST /api/users/) can
use the Django admin at /admin/ once they have set their password through their one-time link: the admin role
is Django's staff and superuser. Annotators and researchers made the same way cannot."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import Client

from annotate.models import User
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "a long admin password 7"


def add_person(tmp_path, role: str) -> str:
    """`users add` as the README shows it; returns the person's set-password path."""
    people = tmp_path / f"{role}.csv"
    people.write_text(f"username\nnew-{role}\n")
    out = io.StringIO()
    call_command("users", "add", "--role", role, "--from", str(people), "--base-url", "http://testserver",
                 stdout=out)
    link = next(line for line in out.getvalue().splitlines() if line.startswith(f"new-{role}\t")).split("\t")[2]
    return link.removeprefix("http://testserver")


def set_password_and_open_the_admin(path: str, username: str) -> bool:
    """Whether the person, after choosing a password through their link, reaches a Django admin list page."""
    browser = Client()
    form = browser.get(path, follow=True)  # Django's reset view moves the token into the session first
    done = browser.post(form.redirect_chain[-1][0], {"new_password1": PASSWORD, "new_password2": PASSWORD})
    assert done.status_code == 302, done.content.decode()[:500]
    browser.post("/admin/login/?next=/admin/", {"username": username, "password": PASSWORD})
    page = browser.get("/admin/annotate/modelconfig/")
    return page.status_code == 200 and "Select model config to change" in page.content.decode()


def test_an_admin_made_by_the_command_uses_the_django_admin(tmp_path):
    assert set_password_and_open_the_admin(add_person(tmp_path, "admin"), "new-admin")
    admin = User.objects.get(username="new-admin")
    assert admin.is_staff and admin.is_superuser and admin.is_admin_role


@pytest.mark.parametrize("role", ["annotator", "researcher"])
def test_other_roles_made_by_the_command_stay_out_of_it(tmp_path, role):
    assert not set_password_and_open_the_admin(add_person(tmp_path, role), f"new-{role}")
    person = User.objects.get(username=f"new-{role}")
    assert not person.is_staff and not person.is_superuser


def test_an_admin_made_over_the_api_is_staff_too(api_client):
    api_client.force_authenticate(UserFactory(username="root", role=User.Role.ADMIN, is_staff=True,
                                              is_superuser=True))
    response = api_client.post("/api/users/", {"role": "admin", "users": [{"username": "second-admin"}]},
                               format="json")
    assert response.status_code == 201, response.content
    made = User.objects.get(username="second-admin")
    assert made.is_staff and made.is_superuser


@pytest.mark.django_db(transaction=True)
def test_admins_made_before_become_django_staff_on_migrate():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    # Found by name: migrations are renumbered when branches are merged.
    [target] = [key for key in executor.loader.graph.nodes if key[1].endswith("_admin_role_is_django_staff")]
    before = [parent for parent in executor.loader.graph.node_map[target].parents if parent.key[0] == "annotate"]
    executor.migrate([before[0].key])
    # The accounts are made as that schema has them: today's model has columns added since.
    OldUser = executor.loader.project_state([before[0].key]).apps.get_model("annotate", "User")
    old = OldUser.objects.create(username="old-admin", role=User.Role.ADMIN)
    researcher = OldUser.objects.create(username="old-researcher", role=User.Role.RESEARCHER)
    assert not old.is_staff
    executor = MigrationExecutor(connection)  # a fresh graph, as `migrate` would load it
    executor.migrate(executor.loader.graph.leaf_nodes("annotate"))
    old, researcher = User.objects.get(pk=old.pk), User.objects.get(pk=researcher.pk)
    assert old.is_staff and old.is_superuser and not researcher.is_staff
