"""A batch's participants table: states, work, quality, the suggested approve or reject with its reason, the
researcher's decisions (kept, audited), returns, and the files a crowd platform takes, by the page, the API and the
commands. The study bundle holds the table by pseudonym only."""

import io
import json
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotate.crowd import services as crowd
from annotate.crowd.study import study_update
from annotate.models import Assignment, Batch, ParticipantDecision, Participation, WorkItem
from annotate.queue.services import assignment_next
from evaluation.exports.bundle import bundle_write
from evaluation.participants.selectors import participants_table
from tests.annotate.crowd.study_data import join
from tests.annotate.helpers import finish
from tests.factories import UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


@pytest.fixture
def study(simulated_model, researcher, client_factory):
    """Four participants of a batch of one item each: two finished (one without a platform id), one returned, one
    still working."""
    batch = make_batch(models=[simulated_model], tasks=6, members=[researcher])
    crowd.batch_set_completion_code(batch=batch, code="PAID")
    Batch.objects.filter(pk=batch.pk).update(items_per_participant=1)
    batch.refresh_from_db()
    study_update(batch=batch, settings={"bonus_rule": "per_item", "bonus_amount": "0.25",
                                        "post_survey": [{"id": "ok", "type": "single", "text": "OK?",
                                                         "options": ["yes", "no"]}]})
    people = {}
    for name, pid in (("aaa", "PID-AAA"), ("bbb", "PID-BBB"), ("ccc", None), ("ddd", "PID-DDD")):
        client = client_factory()
        people[name] = (join(client, batch, pid), client)
    for name in ("aaa", "ccc"):
        user, client = people[name]
        finish(assignment_next(annotator=user))
        client.post(reverse("crowd-survey", args=["post"]), {"ok": "yes"})
        assert "PAID" in client.get(reverse("crowd-done")).content.decode()
    user, client = people["bbb"]
    assignment_next(annotator=user)
    client.post(reverse("crowd-leave"))
    assignment_next(annotator=people["ddd"][0])
    return batch, {name: user for name, (user, _) in people.items()}


@pytest.fixture
def client_factory():
    from django.test import Client

    return Client


def rows_by_id(batch):
    return {row.participant_id or row.pseudonym: row for row in participants_table(batch)}


def test_the_table_says_where_each_participant_is_and_suggests(study):
    batch, people = study
    rows = rows_by_id(batch)
    aaa, bbb, ddd = rows["PID-AAA"], rows["PID-BBB"], rows["PID-DDD"]
    ccc = rows[people["ccc"].pseudonym]
    assert [r.state for r in (aaa, bbb, ccc, ddd)] == ["finished", "returned", "finished", "items"]
    assert (aaa.suggestion, ccc.suggestion, bbb.suggestion, ddd.suggestion) == ("approve", "approve", "", "")
    assert bbb.suggestion_reason == "Returned the study." and ddd.suggestion_reason == "Still working on the study."
    assert (aaa.completed, aaa.bonus, bbb.bonus) == (1, 25 / 100, 0)


def test_decisions_are_kept_and_the_latest_counts(study, researcher, api_client):
    batch, people = study
    api_client.force_authenticate(researcher)
    url = reverse("api-batch-participant-decisions", args=[batch.id])
    bad = api_client.post(url, {"decisions": [{"participant": "PID-AAA", "decision": "reject"}]}, format="json")
    assert bad.status_code == 400 and "say why you reject" in bad.json()["reason"][0]
    ghost = api_client.post(url, {"decisions": [{"participant": "ghost", "decision": "approve"}]}, format="json")
    assert ghost.status_code == 400 and "'ghost'" in ghost.json()["detail"]
    assert api_client.post(url, {"decisions": [{"participant": "PID-AAA", "decision": "reject",
                                                "reason": "Copied answers."}]}, format="json").json() == {"decided": 1}
    api_client.post(url, {"decisions": [{"participant": "PID-AAA", "decision": "approve", "reason": "Misread."}]},
                    format="json")
    listed = {r["participant_id"]: r for r in api_client.get(reverse("api-batch-participants", args=[batch.id])).json()}
    history = listed["PID-AAA"]["decisions"]
    assert [(d["decision"], d["reason"], d["decided_by"], d["suggested"]) for d in history] == [
        ("approve", "Misread.", researcher.username, "approve"), ("reject", "Copied answers.", researcher.username,
                                                                 "approve")]
    assert ParticipantDecision.objects.count() == 2  # nothing overwritten
    assert api_client.post(url, {"accept_suggestions": True}, format="json").json() == {"decided": 1}  # ccc only
    assert rows_by_id(batch)[people["ccc"].pseudonym].decided == "approve"
    assert rows_by_id(batch)["PID-BBB"].decision is None  # a return has no suggestion to apply


def test_the_platform_files(study, researcher, api_client):
    batch, people = study
    api_client.force_authenticate(researcher)
    api_client.post(reverse("api-batch-participant-decisions", args=[batch.id]), {"accept_suggestions": True},
                    format="json")

    def download(name, fmt):
        response = api_client.get(reverse("api-batch-table", args=[batch.id, name, fmt]))
        assert response.status_code == 200, response.content
        return response.content.decode()

    assert download("approvals", "txt") == "PID-AAA\n"  # approved, with a platform id (ccc has none)
    assert download("bonuses", "csv") == "PID-AAA,0.25\n"  # participant_id,amount: Prolific's bulk bonus lines
    table = download("participants", "csv")
    assert table.splitlines()[0].startswith("participant,participant_id,invite_link,joined_at,state")
    assert "PID-BBB" in table and "returned" in table
    surveys = json.loads(download("surveys", "json"))
    assert sorted(r["post:ok"] for r in surveys["rows"]) == ["yes", "yes"]
    out = io.StringIO()
    call_command("export_tables", "--batch", batch.name, "--table", "bonuses", "--format", "csv", stdout=out)
    assert out.getvalue().strip() == "PID-AAA,0.25"


def test_the_bundle_holds_the_participants_by_pseudonym_only(study):
    batch, people = study
    buffer = io.BytesIO()
    summary = bundle_write(batch, buffer)
    assert {"crowd/participants.csv", "crowd/participants.json", "crowd/surveys.csv", "crowd/study.json"} <= set(
        summary.files)
    with zipfile.ZipFile(buffer) as bundle:
        everything = "".join(bundle.read(name).decode() for name in bundle.namelist() if name.startswith("crowd/"))
        assert people["aaa"].pseudonym in bundle.read("crowd/participants.csv").decode()
        assert "README.md" in bundle.namelist() and "crowd/participants.csv" in bundle.read("README.md").decode()
    assert "PID-" not in everything  # platform ids stay with the researchers


def test_marking_returns_frees_items_at_once(study, researcher, api_client):
    batch, people = study
    held = Assignment.objects.get(annotator=people["ddd"], status="active")
    api_client.force_authenticate(researcher)
    url = reverse("api-batch-participants-returned", args=[batch.id])
    assert api_client.post(url, {"participants": ["PID-DDD", "PID-AAA"]}, format="json").json() == {"returned": 1}
    held.refresh_from_db()
    assert held.status == "expired" and WorkItem.objects.get(pk=held.work_item_id).active_count == 0
    participation = Participation.objects.get(user=people["ddd"])
    assert participation.end_reason == "returned" and participation.ended_by == researcher
    assert api_client.post(url, {"participants": []}, format="json").status_code == 400


def test_the_three_personas(study, researcher, annotator, api_client, client):
    batch, _ = study
    for name in ("api-batch-participants",):
        api_client.force_authenticate(annotator)
        assert api_client.get(reverse(name, args=[batch.id])).status_code == 403
        api_client.force_authenticate(UserFactory(username="rita-2", role="researcher"))
        assert api_client.get(reverse(name, args=[batch.id])).status_code == 404
    client.force_login(researcher)
    page = client.get(reverse("research-participants", args=[batch.id]))
    html = page.content.decode()
    assert page.status_code == 200 and "PID-AAA" in html and "Returned the study." in html
    response = client.post(reverse("research-participants-decide", args=[batch.id]),
                           {"participant": "PID-DDD", "decision": "reject", "reason": "No work."})
    assert response.status_code == 302
    assert rows_by_id(batch)["PID-DDD"].decided == "reject"


def test_the_participants_command(study, researcher):
    batch, people = study
    out = io.StringIO()
    call_command("participants", "--batch", batch.name, "--approve", "PID-AAA", "--by", researcher.username,
                 stdout=out, stderr=io.StringIO())
    assert "PID-AAA" in out.getvalue() and "approve" in out.getvalue()
    with pytest.raises(CommandError, match="say why you reject"):
        call_command("participants", "--batch", batch.name, "--reject", "PID-DDD", stdout=io.StringIO(),
                     stderr=io.StringIO())
    call_command("participants", "--batch", batch.name, "--returned", "PID-DDD", stdout=io.StringIO(),
                 stderr=io.StringIO())
    out = io.StringIO()
    call_command("participants", "--batch", batch.name, "--json", stdout=out, stderr=io.StringIO())
    listed = {r["participant_id"]: r for r in json.loads(out.getvalue())}
    assert listed["PID-DDD"]["state"] == "returned"
    assert listed["PID-AAA"]["decisions"][0]["decided_by"] == researcher.username


def test_the_dashboard_counts_participants(study):
    from annotate.watch.selectors import batch_dashboard

    batch, _ = study
    counts = batch_dashboard(batch)["participants"]
    assert (counts["joined"], counts["finished"], counts["working"], counts["returned"]) == (4, 2, 1, 1)
