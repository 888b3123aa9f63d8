"""An import names the researchers who may read the batch (or every researcher): they see it at once."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotate.imports.batches import batch_import
from annotate.models import Batch, User
from tests.annotate.imports.files import api_import
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def researchers(*names):
    return [UserFactory(username=n, role=User.Role.RESEARCHER) for n in names]


def test_named_researchers_read_the_batch_at_once(sample_zip, client):
    rita, _ = researchers("rita", "sam")
    call_command("import_batch", str(sample_zip), "--name", "named", "--researchers", "rita", "--no-progress")
    batch = Batch.objects.get(name="named")
    assert list(batch.members.values_list("username", flat=True)) == ["rita"]
    client.force_login(rita)
    assert client.get(f"/research/batches/{batch.id}/").status_code == 200
    client.force_login(User.objects.get(username="sam"))
    assert client.get(f"/research/batches/{batch.id}/").status_code in (403, 404)


def test_everyone_with_the_role(sample_zip):
    researchers("rita", "sam")
    UserFactory(username="anna", role=User.Role.ANNOTATOR)
    report = batch_import(path=sample_zip, name="all", kind="interfeedback", settings={"researchers": "*"})
    assert report.ok, report.render()
    assert set(Batch.objects.get(name="all").members.values_list("username", flat=True)) == {"rita", "sam"}


def test_unknown_or_non_researcher_names_are_errors_and_nothing_is_written(sample_zip):
    researchers("rita")
    UserFactory(username="anna", role=User.Role.ANNOTATOR)
    report = batch_import(path=sample_zip, name="bad", kind="interfeedback",
                          settings={"researchers": "rita,anna,ghost"})
    assert [str(p) for p in report.problems] == [
        "field settings.researchers: no active researcher or admin named 'anna', 'ghost'"]
    assert not Batch.objects.filter(name="bad").exists()


def test_the_api_and_the_form_take_researchers(api_client, admin_user, sample_zip):
    researchers("rita")
    api_client.force_authenticate(admin_user)
    batch = api_import(api_client, sample_zip, name="via-api", researchers="rita")
    assert list(batch.members.values_list("username", flat=True)) == ["rita"]
