"""The Prolific study's API and pages refuse who may not use them and say what is wrong with bad input: 403 for
an annotator, 404 for a researcher who is not a member of the batch (the same answer as a batch that does not
exist, so ids cannot be probed) and for a batch without a Prolific study, 400 naming the field for bad input; and
the connection check names the workspace the token reaches."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotate.models import ProlificCall, ProlificStudy, User
from tests.annotate.prolific.flow import create_and_publish, join
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]

API = ("api-prolific-study", "api-prolific-actions", "api-prolific-decisions", "api-prolific-bonuses")
PAGES = ("research-prolific-check", "research-prolific-create", "research-prolific-study", "research-prolific-pay")
CREATE = {"name": "Rate model answers", "description": "Say what is wrong.", "estimated_minutes": 15,
          "reward": "2.50"}


def api(user: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def detail(response) -> str:
    return response.content.decode()


def test_an_annotator_gets_403_and_a_researcher_outside_the_batch_404_on_every_endpoint(batch, fake, outsider,
                                                                                          client):
    stranger = UserFactory(username="stella", role=User.Role.RESEARCHER)
    for name in API:
        url = reverse(name, args=[batch.id])
        assert api(outsider).post(url, {}, format="json").status_code == 403, name
        refused = api(stranger).post(url, {}, format="json")
        assert refused.status_code == 404 and "not a member" in detail(refused), name
        assert APIClient().post(url, {}, format="json").status_code in (401, 403), name
    assert api(outsider).get(reverse("api-prolific-study", args=[batch.id])).status_code == 403
    for name in PAGES:
        client.force_login(outsider)
        assert client.post(reverse(name, args=[batch.id])).status_code in (302, 403), name
        client.force_login(stranger)
        assert client.post(reverse(name, args=[batch.id])).status_code == 404, name
    assert not fake.requests and not ProlificStudy.objects.exists()  # nobody outside reached Prolific


def test_a_missing_batch_or_study_is_404_in_words(batch, researcher, fake):
    for name in API:
        missing = api(researcher).post(reverse(name, args=[987654]), {}, format="json")
        assert missing.status_code == 404 and "Batch 987654 does not exist" in detail(missing), name
    assert api(researcher).get(reverse("api-prolific-study", args=[batch.id])).status_code == 404
    for name, body in (("api-prolific-actions", {"action": "publish"}), ("api-prolific-decisions", {}),
                       ("api-prolific-bonuses", {})):
        answer = api(researcher).post(reverse(name, args=[batch.id]), body, format="json")
        assert answer.status_code == 404 and "no Prolific study yet" in detail(answer), name
    assert not fake.requests


def test_bad_input_is_400_naming_what_is_wrong(batch, researcher, fake, client):
    me = api(researcher)
    study_url = reverse("api-prolific-study", args=[batch.id])
    missing = me.post(study_url, {"name": "x"}, format="json")
    assert missing.status_code == 400 and all(f in detail(missing) for f in ("description", "estimated_minutes",
                                                                               "reward"))
    for change, field, why in (({"reward": "-1"}, "reward", "more than 0"),
                               ({"estimated_minutes": 0}, "estimated_minutes", "whole minutes"),
                               ({"places": 0}, "places", "at least 1"),
                               ({"origin": "lab.example.org"}, "origin", "Enter a valid URL")):
        answer = me.post(study_url, {**CREATE, **change}, format="json")
        assert answer.status_code == 400 and field in detail(answer) and why in detail(answer), change
    assert not ProlificStudy.objects.exists() and not fake.studies  # nothing was sent for bad input

    study = create_and_publish(client, batch, researcher)
    actions = reverse("api-prolific-actions", args=[batch.id])
    for body, why in (({"action": "explode"}, "not a valid choice"), ({}, "This field is required"),
                      ({"action": "add_places", "more": 0}, "how many places to add"),
                      ({"action": "add_places", "more": "many"}, "A valid integer is required")):
        answer = me.post(actions, body, format="json")
        assert answer.status_code == 400 and why in detail(answer), body
    refused = me.post(actions, {"action": "publish"}, format="json")  # Prolific's own refusal, in words
    assert refused.status_code == 400 and "The study is ACTIVE: it cannot PUBLISH" in detail(refused)

    join(study, fake, "pid-a")
    fake.set_status("pid-a", "AWAITING REVIEW")
    decisions = reverse("api-prolific-decisions", args=[batch.id])
    for decision, why in (({"participant_id": "pid-a", "decision": "maybe"}, "not a valid choice"),
                          ({"participant_id": "pid-a", "decision": "reject", "rejection_category": "LOW_EFFORT"},
                           "at least 100 characters"),
                          ({"participant_id": "pid-a", "decision": "reject", "message": "x" * 120},
                           "one of Prolific's categories"),
                          ({"participant_id": "pid-nobody", "decision": "approve"}, "lists no submission")):
        answer = me.post(decisions, {"dry_run": False, "decisions": [decision]}, format="json")
        assert answer.status_code == 400 and why in detail(answer), decision
    assert {s["status"] for s in fake.submissions.values()} == {"AWAITING REVIEW"}  # nothing decided
    bonuses = me.post(reverse("api-prolific-bonuses", args=[batch.id]), {"dry_run": "perhaps"}, format="json")
    assert bonuses.status_code == 400 and "dry_run" in detail(bonuses)

    page = client.post(reverse("research-prolific-study", args=[batch.id]), {"action": "add_places", "more": "two"},
                       follow=True)
    assert "Places to add must be a whole number" in detail(page)


def test_the_connection_check_names_the_workspace(batch, researcher, fake, client):
    client.force_login(researcher)
    page = client.post(reverse("research-prolific-check", args=[batch.id]), follow=True)
    assert "The Prolific token works: it belongs to Test Researcher and reaches the workspace Feedback Lab " \
           "workspace." in detail(page)
    assert [c.path for c in ProlificCall.objects.filter(by=researcher).order_by("id")] == ["users/me/", "workspaces/"]
