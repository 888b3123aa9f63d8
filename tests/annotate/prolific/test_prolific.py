"""A batch's Prolific study through Prolific's API, against the local fake server (tests/fake_prolific_server.py):
create and publish from the invites page, participants through the Prolific link, a return on Prolific freeing the
held item, approvals and bonuses paid once (also when the worker dies between Prolific's answer and our record),
errors in plain words, and the token in no page, call record or log line."""

import logging
import re

import pytest
from django.urls import reverse

from annotate.crowd.decisions import participant_decide
from annotate.models import (
    Assignment,
    Participation,
    ProlificAction,
    ProlificCall,
)
from annotate.prolific import payments
from annotate.prolific.client import ProlificAuthError, ProlificClient, ProlificRateLimited
from annotate.prolific.sync import prolific_studies_sync
from annotate.queue.services import assignment_next
from tests.annotate.helpers import finish
from tests.annotate.prolific.flow import create_and_publish, join

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


def test_a_study_from_draft_to_paid_bonuses_with_each_payment_once(client, batch, researcher, fake):
    study = create_and_publish(client, batch, researcher)
    sent = fake.studies[study.prolific_id]
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in sent["external_study_url"] and sent["reward"] == 250
    assert [c["code"] for c in sent["completion_codes"]] == ["DONE-42", "SCREEN-1", "NOCONSENT-1"]

    people = {pid: join(study, fake, pid) for pid in ("pid-a", "pid-b", "pid-c")}
    for pid in ("pid-a", "pid-b"):
        for _ in range(2):
            finish(assignment_next(annotator=people[pid]))
        fake.set_status(pid, "AWAITING REVIEW")
    held = assignment_next(annotator=people["pid-c"])
    assert held.status == Assignment.Status.ACTIVE
    fake.set_status("pid-c", "RETURNED")

    assert prolific_studies_sync() == 1  # the beat task's service: pages through 3 submissions (2 a page)
    held.refresh_from_db()
    assert held.status != Assignment.Status.ACTIVE  # the item is free again at once
    assert Participation.objects.get(user=people["pid-c"]).end_reason == Participation.End.RETURNED

    page = client.get(reverse("research-participants", args=[batch.id])).content.decode()
    assert "AWAITING REVIEW" in page and "RETURNED" in page

    for pid in ("pid-a", "pid-b"):
        participant_decide(participation=people[pid].participation, decision="approve", by=researcher)
    dry = client.post(reverse("research-prolific-pay", args=[batch.id]), {"what": "approvals"})
    assert "Nothing has been sent yet" in dry.content.decode()
    assert {s["status"] for s in fake.submissions.values()} == {"AWAITING REVIEW", "RETURNED"}
    client.post(reverse("research-prolific-pay", args=[batch.id]), {"what": "approvals", "confirm": "1"})
    assert sorted(s["status"] for s in fake.submissions.values()) == ["APPROVED", "APPROVED", "RETURNED"]

    dry = client.post(reverse("research-prolific-pay", args=[batch.id]), {"what": "bonuses"}).content.decode()
    assert "Bonuses in total: 3.00" in dry and fake.ledger == []
    client.post(reverse("research-prolific-pay", args=[batch.id]), {"what": "bonuses", "confirm": "1"})
    client.post(reverse("research-prolific-pay", args=[batch.id]), {"what": "bonuses", "confirm": "1"})  # again
    assert sorted((r["participant_id"], r["amount"]) for r in fake.ledger) == [("pid-a", 150), ("pid-b", 150)]
    assert ProlificCall.objects.filter(batch=batch, path__contains="/pay/").count() == 1
    assert ProlificCall.objects.filter(batch=batch, by=researcher).exists()


class WorkerDied(BaseException):
    """As a killed worker: nothing after it runs (not an Exception, so no handler records anything)."""


def test_a_worker_killed_between_the_payment_and_its_record_never_pays_twice(batch, researcher, fake, monkeypatch,
                                                                              client):
    study = create_and_publish(client, batch, researcher)
    for pid in ("pid-a", "pid-b"):
        user = join(study, fake, pid)
        fake.set_status(pid, "AWAITING REVIEW")
        participant_decide(participation=user.participation, decision="approve", by=researcher)

    real_pay = ProlificClient.bonuses_pay

    def pay_then_die(self, bulk_id):
        real_pay(self, bulk_id)  # Prolific has paid...
        raise WorkerDied  # ...and the worker dies before recording it

    monkeypatch.setattr(ProlificClient, "bonuses_pay", pay_then_die)
    with pytest.raises(WorkerDied):
        payments.prolific_bonuses_pay(batch=batch, by=researcher, dry_run=False)
    assert len(fake.ledger) == 2
    assert set(ProlificAction.objects.values_list("state", flat=True)) == {ProlificAction.State.SENDING}

    monkeypatch.setattr(ProlificClient, "bonuses_pay", real_pay)
    plan = payments.prolific_bonuses_pay(batch=batch, by=researcher, dry_run=False)  # the rerun
    assert plan.send == [] and len(plan.already) == 2
    assert sorted(r["participant_id"] for r in fake.ledger) == ["pid-a", "pid-b"]  # one payment each
    assert set(ProlificAction.objects.values_list("state", flat=True)) == {ProlificAction.State.DONE}


def test_the_token_is_in_no_page_call_record_or_log_line(batch, researcher, fake, client, caplog):
    caplog.set_level(logging.DEBUG)
    study = create_and_publish(client, batch, researcher)
    join(study, fake, "pid-a")
    fake.token = "another-token"  # Prolific now refuses ours
    response = client.post(reverse("research-prolific-check", args=[batch.id]), follow=True)
    text = response.content.decode()
    assert "refused the API token" in text
    pages = [text] + [client.get(reverse(name, args=[batch.id])).content.decode()
                      for name in ("research-invites", "research-participants")]
    pages.append(client.get(reverse("api-prolific-study", args=[batch.id])).content.decode())
    token = "fake-prolific-token"
    assert all(token not in page for page in pages)
    assert token not in str(list(ProlificCall.objects.values()))
    assert token not in caplog.text
    assert fake.requests and all(r["authorization"] == f"Token {token}" for r in fake.requests)


def test_rate_limits_are_waited_out_and_errors_read_as_sentences(batch, researcher, fake, client, settings):
    study = create_and_publish(client, batch, researcher)
    waits = []
    api = ProlificClient(base_url=settings.PROLIFIC_API_URL, token=fake.token, sleep=waits.append)
    fake.rate_limit(times=2, retry_after="1")
    assert api.study_get(study.prolific_id)["status"] == "ACTIVE"
    assert waits == [1.0, 1.0]  # Retry-After honoured
    fake.rate_limit(times=3, retry_after="7")
    with pytest.raises(ProlificRateLimited, match="try again in 7 seconds"):
        api.study_get(study.prolific_id)
    with pytest.raises(ProlificAuthError, match="refused the API token"):
        ProlificClient(base_url=settings.PROLIFIC_API_URL, token="wrong").me()

    user = join(study, fake, "pid-a")
    fake.set_status("pid-a", "AWAITING REVIEW")
    short = client.post(reverse("api-prolific-decisions", args=[batch.id]), {"dry_run": False, "decisions": [
        {"participant_id": "pid-a", "decision": "reject", "rejection_category": "LOW_EFFORT", "message": "Too short"}]},
        content_type="application/json")
    assert short.status_code == 400 and "at least 100 characters" in short.content.decode()
    assert fake.submissions and {s["status"] for s in fake.submissions.values()} == {"AWAITING REVIEW"}
    message = "Thank you for taking part. " * 5
    done = client.post(reverse("api-prolific-decisions", args=[batch.id]), {"dry_run": False, "decisions": [
        {"participant_id": "pid-a", "decision": "reject", "rejection_category": "LOW_EFFORT", "message": message}]},
        content_type="application/json")
    assert done.status_code == 200 and {s["status"] for s in fake.submissions.values()} == {"REJECTED"}
    assert user.participation.decisions.first().decision == "reject"
    bad = client.post(reverse("api-prolific-study", args=[batch.id]), {
        "name": "x", "description": "y", "estimated_minutes": 5, "reward": "1.00"}, content_type="application/json")
    assert bad.status_code in (400, 409) and re.search("already has a Prolific study", bad.content.decode())
