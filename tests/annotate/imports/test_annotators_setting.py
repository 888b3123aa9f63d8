"""An import may name the batch's annotators: only they (and participants invited to it) are served the batch;
"*" or naming no one serves it to everyone with the annotator role. The same through the command, the API and
the form; a name that is not an active annotator is an error and nothing is written."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from annotate.errors import ApplicationError
from annotate.imports.batches import batch_import, batch_settings_apply
from annotate.imports.jobs import import_job_run
from annotate.models import Batch, User
from annotate.queue.services import assignment_next, nothing_to_serve, open_items_count
from tests.annotate.imports.files import api_import
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


def annotators(*names):
    return [UserFactory(username=n, role=User.Role.ANNOTATOR) for n in names]


@pytest.fixture
def named(no_dispatch):
    """A batch served only to anna; beside it a batch open to everyone."""
    anna, bob = annotators("anna", "bob")
    only_anna = make_batch(models=[ModelConfigFactory()], tasks=2)
    batch_settings_apply(batch=only_anna, settings={"annotators": "anna"})
    return only_anna, anna, bob


def test_only_the_named_annotators_are_served_the_batch(named):
    only_anna, anna, bob = named
    only_anna.refresh_from_db()
    assert only_anna.annotators_named and list(only_anna.annotators.values_list("username", flat=True)) == ["anna"]
    # Bob: not through the batch, not through the queue across batches, and nothing to wait for.
    assert assignment_next(annotator=bob, batch=only_anna) is None
    assert assignment_next(annotator=bob) is None
    assert open_items_count(annotator=bob) == 0
    assert nothing_to_serve(annotator=bob).state == "done"
    assert nothing_to_serve(annotator=bob, batch=only_anna).state == "done"
    # Anna: both ways.
    assert open_items_count(annotator=anna) == 2
    assert assignment_next(annotator=anna, batch=only_anna).work_item.batch_id == only_anna.pk


def test_a_batch_open_to_everyone_beside_it_still_serves_bob(named):
    only_anna, _, bob = named
    open_batch = make_batch(models=[ModelConfigFactory()], tasks=1)
    served = assignment_next(annotator=bob)
    assert served is not None and served.work_item.batch_id == open_batch.pk
    assert not open_batch.annotators_named


def test_star_serves_everyone_again(named):
    only_anna, _, bob = named
    batch_settings_apply(batch=only_anna, settings={"annotators": "*"})
    only_anna.refresh_from_db()
    assert not only_anna.annotators_named and not only_anna.annotators.exists()
    assert assignment_next(annotator=bob, batch=only_anna) is not None


def test_an_invited_participant_is_served_the_batch_they_joined(named):
    only_anna, _, _ = named
    participant = UserFactory(username="p-1", role=User.Role.ANNOTATOR, crowd_batch=only_anna)
    assert assignment_next(annotator=participant) is not None


def test_names_that_are_not_active_annotators_are_errors(named):
    only_anna, _, _ = named
    UserFactory(username="rita", role=User.Role.RESEARCHER)
    UserFactory(username="gone", role=User.Role.ANNOTATOR, is_active=False)
    with pytest.raises(ApplicationError) as error:
        batch_settings_apply(batch=only_anna, settings={"annotators": "anna,rita,gone,ghost"})
    assert "no active annotator named 'rita', 'gone', 'ghost'" in error.value.message
    assert list(only_anna.annotators.values_list("username", flat=True)) == ["anna"]  # unchanged
    with pytest.raises(ApplicationError, match="expected usernames"):
        batch_settings_apply(batch=only_anna, settings={"annotators": 7})


def test_the_command_names_annotators_and_a_bad_name_writes_nothing(sample_zip):
    annotators("anna", "bob")
    call_command("import_batch", str(sample_zip), "--name", "cmd", "--annotators", "anna,bob",
                 "--no-progress")
    batch = Batch.objects.get(name="cmd")
    assert batch.annotators_named
    assert set(batch.annotators.values_list("username", flat=True)) == {"anna", "bob"}

    report = batch_import(path=sample_zip, name="bad", kind="interfeedback", settings={"annotators": "ghost"})
    assert [str(p) for p in report.problems] == ["field settings.annotators: no active annotator named 'ghost'"]
    assert not Batch.objects.filter(name="bad").exists()


def test_the_api_and_the_form_take_annotators(api_client, client, admin_user, sample_zip, no_dispatch):
    annotators("anna", "bob")
    api_client.force_authenticate(admin_user)
    batch = api_import(api_client, sample_zip, name="via-api", annotators="bob")
    assert list(batch.annotators.values_list("username", flat=True)) == ["bob"]

    client.force_login(admin_user)
    page = client.get("/imports/new/").content.decode()
    assert 'name="annotators"' in page
    response = client.post("/imports/new/", {"file": SimpleUploadedFile("t.zip", sample_zip.read_bytes()),
                                             "name": "via-form", "kind": "interfeedback", "annotators": "anna"})
    assert response.status_code == 302, response.content.decode()[:500]
    job_id = int(response["Location"].rstrip("/").split("/")[-1])
    import_job_run(job_id=job_id)
    assert list(Batch.objects.get(name="via-form").annotators.values_list("username", flat=True)) == ["anna"]
