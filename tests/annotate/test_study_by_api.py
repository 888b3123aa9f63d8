"""The browser story of a study (tests/browser/test_study_story.py) through the API and commands only: models by the
API, people and tokens by commands, the batch by `import_batch`, an invite link by the API, annotators through
`POST /api/next/` and the session API (one of them joined through the link), the dashboard by the API, and the
study bundle by `export_bundle`."""

import io
import re
import zipfile

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotate.models import Batch, Session, User
from tests.annotate.helpers import run_pending_round
from tests.annotate.imports.files import task, write_zip
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


def token_client(username: str) -> APIClient:
    out = io.StringIO()
    call_command("token", "issue", username, stdout=out)
    key = re.search(r"\b[0-9a-f]{40}\b", out.getvalue()).group(0)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def work_through(client, batch_name: str) -> int:
    """Take items until the queue says done; each session answered with feedback until it completes."""
    finished = 0
    while (served := client.post(reverse("api-next"), {"batch": batch_name}, format="json").json())["state"] == "item":
        session = Session.objects.get(pk=served["session_id"])
        run_pending_round(session)
        for k in range(3):
            if session.status == Session.Status.COMPLETED:
                break
            sent = client.post(reverse("api-session-feedback", args=[session.id]),
                               {"feedback": "Check your reasoning about the picture.", "client_request_id": f"r{k}"},
                               format="json")
            assert sent.status_code in (200, 201, 202), sent.content
            run_pending_round(session)
        assert session.status == Session.Status.COMPLETED
        finished += 1
    assert served["state"] == "done"  # (an invited participant also gets the completion page's url)
    return finished


def test_a_study_through_the_api_and_commands(tmp_path):
    UserFactory(username="api-admin", role=User.Role.ADMIN, is_staff=True, is_superuser=True)
    UserFactory(username="api-rita", role=User.Role.RESEARCHER)
    admin = token_client("api-admin")
    for name, shown in (("api-a", "Model Alpha"), ("api-b", "Model Beta")):
        created = admin.post(reverse("api-models"), {"name": name, "display_name": shown, "backend": "simulated",
                                                     "backend_settings": {"chunk_delay": 0}}, format="json")
        assert created.status_code == 201, created.content
    people = tmp_path / "people.csv"
    people.write_text("username\napi-ann1\napi-ann2\napi-ann3\n")
    out = io.StringIO()
    call_command("users", "add", "--role", "annotator", "--from", str(people), stdout=out)
    assert out.getvalue().count("/set-password/") == 3

    instructions = tmp_path / "instructions.md"
    instructions.write_text("Say **what** is wrong, never the answer.")
    call_command("import_batch", str(write_zip(tmp_path / "study.zip", [
        task("vl-1", category="Visual Logic"), task("mp-1", category="MMMU-Pro", answer="C")])),
        "--name", "api-study", "--models", "api-a,api-b", "--overlap", "1", "--researchers", "api-rita",
        "--instructions", str(instructions), "--category-order", "MMMU-Pro,Visual Logic", "--no-progress",
        stdout=io.StringIO())
    batch = Batch.objects.get(name="api-study")

    rita = token_client("api-rita")
    link = rita.post(reverse("api-invite-links", args=[batch.id]),
                     {"label": "pilot", "items_per_participant": 1, "completion_code": "API-DONE"}, format="json")
    assert link.status_code == 201, link.content
    joined = Client()
    assert joined.post(link.json()["url"]).status_code == 302
    participant = APIClient()
    participant.force_authenticate(User.objects.get(invite_link_id=link.json()["id"]))
    assert work_through(participant, batch.name) == 1  # their share

    assert work_through(token_client("api-ann1"), batch.name) == 2  # never the same task twice
    assert work_through(token_client("api-ann2"), batch.name) == 1
    assert work_through(token_client("api-ann3"), batch.name) == 0

    dashboard = rita.get(reverse("api-batch-dashboard", args=[batch.id])).json()
    assert dashboard["totals"] == {"needed": 4, "done": 4, "in_progress": 0, "left": 0}
    [usage] = rita.get(reverse("api-invite-links", args=[batch.id])).json()
    assert (usage["joined"], usage["items_done"], usage["finished_share"]) == (1, 1, 1)

    bundle_path = tmp_path / "bundle.zip"
    call_command("export_bundle", "--batch", batch.name, "--out", str(bundle_path), stdout=io.StringIO())
    with zipfile.ZipFile(bundle_path) as bundle:
        table3 = bundle.read("tables/table3_accuracy.md").decode()
        assert "never the answer" in bundle.read("instructions.md").decode()
    header = next(line for line in table3.splitlines() if "Visual Logic" in line)
    assert header.index("MMMU-Pro") < header.index("Visual Logic")
    assert "Model Alpha" in table3 and "Model Beta" in table3 and "api-a" not in table3
