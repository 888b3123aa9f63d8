"""``manage.py prolific``: the batch's Prolific study from the command line against the local fake server, from the
token check to paid bonuses, with dry runs that send nothing, --json output, and errors as one sentence."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotate.crowd.decisions import participant_decide
from annotate.models import ProlificCall, ProlificStudy
from tests.annotate.prolific.flow import join

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]
MESSAGE = "Your answers were copied from one item to the next without reading the model's answers. " * 2


def run(*args: str) -> str:
    out = StringIO()
    call_command("prolific", *args, stdout=out)
    return out.getvalue()


def test_check_names_the_workspace_and_refuses_a_wrong_token_in_words(fake, monkeypatch, settings):
    said = run("check")
    assert "works" in said and "Test Researcher" in said and "Feedback Lab workspace" in said
    assert json.loads(run("check", "--json")) == {"researcher": "Test Researcher",
                                                  "workspaces": ["Feedback Lab workspace"]}
    monkeypatch.setenv(settings.PROLIFIC_TOKEN_ENV, "not-the-token")
    with pytest.raises(CommandError, match="refused the API token"):
        run("check")
    monkeypatch.delenv(settings.PROLIFIC_TOKEN_ENV)
    with pytest.raises(CommandError, match=f"set the environment variable {settings.PROLIFIC_TOKEN_ENV}"):
        run("check")


def test_a_study_from_draft_to_paid_bonuses_by_command(fake, batch, researcher):
    said = run("create", "--batch", batch.name, "--name", "Rate model answers", "--description",
               "Read a question and an answer; say what is wrong.", "--minutes", "15", "--reward", "2.50",
               "--base-url", "https://lab.example.org")
    study = ProlificStudy.objects.get(batch=batch)
    assert f"Created the Prolific study {study.prolific_id} as a draft with 3 places" in said
    assert f"cost of {study.total_cost_cents / 100:.2f}" in said
    assert fake.studies[study.prolific_id]["external_study_url"].startswith("https://lab.example.org/")
    assert run("publish", "--batch", batch.name).strip() == "The study is ACTIVE on Prolific."
    assert run("pause", "--batch", batch.name).strip() == "The study is PAUSED on Prolific."
    assert json.loads(run("resume", "--batch", batch.name, "--json"))["status"] == "ACTIVE"
    assert "the study now has 5" in run("add-places", "--batch", batch.name, "2")
    assert fake.studies[study.prolific_id]["total_available_places"] == 5

    people = {pid: join(study, fake, pid) for pid in ("pid-a", "pid-b", "pid-c")}
    fake.set_status("pid-a", "AWAITING REVIEW")
    fake.set_status("pid-b", "AWAITING REVIEW")
    fake.set_status("pid-c", "RETURNED")
    assert "Read 3 submissions from Prolific; 1 newly returned" in run("sync", "--batch", batch.name)

    participant_decide(participation=people["pid-a"].participation, decision="approve", by=researcher)
    dry = run("approve", "--batch", batch.name, "--dry-run")
    assert "Would approve pid-a." in dry and "nothing was sent" in dry
    assert fake.submissions and all(s["status"] != "APPROVED" for s in fake.submissions.values())
    assert "Did approve pid-a." in run("approve", "--batch", batch.name)
    assert "Already done for pid-a" in run("approve", "--batch", batch.name, "--participant", "pid-a")

    rejected = json.loads(run("reject", "--batch", batch.name, "--participant", "pid-b", "--category", "LOW_EFFORT",
                              "--message", MESSAGE, "--json"))
    assert rejected["dry_run"] is False and [r["participant_id"] for r in rejected["send"]] == ["pid-b"]
    assert sorted(s["status"] for s in fake.submissions.values()) == ["APPROVED", "REJECTED", "RETURNED"]

    dry = run("bonus", "--batch", batch.name, "--dry-run")
    assert "Would pay a bonus to pid-a 1.50." in dry and "Bonuses in total: 1.50." in dry and fake.ledger == []
    paid = run("bonus", "--batch", batch.name)
    assert "Did pay a bonus to pid-a 1.50." in paid and "with Prolific's fees" in paid
    assert "Already done for pid-a: paid." in run("bonus", "--batch", batch.name)  # a repeat pays nothing
    assert fake.ledger == [{"participant_id": "pid-a", "amount": 150, "bulk": fake.ledger[0]["bulk"]}]
    assert ProlificCall.objects.filter(batch=batch, path__contains="/pay/").count() == 1


def test_bad_input_reads_as_one_sentence(fake, batch):
    with pytest.raises(CommandError, match="No batch named 'nope'"):
        run("publish", "--batch", "nope")
    with pytest.raises(CommandError, match="has no Prolific study yet"):
        run("publish", "--batch", batch.name)
    with pytest.raises(CommandError, match="reward: more than 0"):
        run("create", "--batch", batch.name, "--name", "x", "--description", "y", "--minutes", "5", "--reward", "-1")
    with pytest.raises(CommandError, match="estimated_minutes: whole minutes"):
        run("create", "--batch", batch.name, "--name", "x", "--description", "y", "--minutes", "0", "--reward", "1")
    assert not ProlificStudy.objects.exists() and not fake.studies
    run("create", "--batch", batch.name, "--name", "x", "--description", "y", "--minutes", "5", "--reward", "1")
    with pytest.raises(CommandError, match="already has a Prolific study"):
        run("create", "--batch", batch.name, "--name", "x", "--description", "y", "--minutes", "5", "--reward", "1")
    with pytest.raises(CommandError, match="places: how many places to add"):
        run("add-places", "--batch", batch.name, "0")
    with pytest.raises(CommandError, match="Nobody to approve"):
        run("approve", "--batch", batch.name)
    with pytest.raises(CommandError, match="at least 100 characters"):
        run("reject", "--batch", batch.name, "--participant", "pid-x", "--category", "OTHER", "--message", "no")
    with pytest.raises(CommandError, match="^Prolific refused this: Invalid transition; The study is UNPUBLISHED: it cannot PAUSE"):
        run("pause", "--batch", batch.name)
