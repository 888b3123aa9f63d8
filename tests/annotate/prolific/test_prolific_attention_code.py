"""A participant ended by attention checks sees the code the batch's Prolific study maps to a review (the optional
attention-check code of its creation), on the end page and in the study API, so they can hand it to Prolific;
without such a code they see none, as before."""

import pytest
from django.test import Client
from django.urls import reverse

from annotate.crowd.ending import participation_end
from annotate.models import Participation
from tests.annotate.prolific.flow import join

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


def ended_by_attention(study, fake, pid: str) -> Client:
    user = join(study, fake, pid)
    participation_end(Participation.objects.get(user=user), Participation.End.ATTENTION)
    participant = Client()
    participant.force_login(user)
    return participant


@pytest.mark.parametrize("attention_code", ["ATTN-FAIL-3", ""])
def test_a_participant_ended_by_attention_checks_sees_the_studys_attention_code(batch, researcher, fake, client,
                                                                                attention_code):
    client.force_login(researcher)
    client.post(reverse("research-prolific-create", args=[batch.id]), {
        "name": "Rate model answers", "description": "Say what is wrong.", "estimated_minutes": "15",
        "reward": "2.50", "attention_code": attention_code})
    study = batch.prolific_study
    sent = {c["code_type"]: c["code"] for c in fake.studies[study.prolific_id]["completion_codes"]}
    assert sent.get("FAILED_ATTENTION_CHECK") == (attention_code or None)

    participant = ended_by_attention(study, fake, "pid-a")
    page = participant.get("/study/", follow=True).content.decode()
    assert "attention checks, so your participation has ended" in page
    document = participant.get("/api/study/").json()
    if attention_code:
        assert f'<strong id="end-code">{attention_code}</strong>' in page
        assert document["code"] == attention_code
    else:
        assert 'id="end-code"' not in page and document["code"] is None
