"""Steps of a Prolific study the tests share: create and publish it from the invites page, and a participant coming
through the Prolific link (and so starting a submission on the fake server)."""

from django.test import Client
from django.urls import reverse

from annotate.models import ProlificStudy, User


def create_and_publish(client, batch, researcher) -> ProlificStudy:
    client.force_login(researcher)
    response = client.post(reverse("research-prolific-create", args=[batch.id]), {
        "name": "Rate model answers", "description": "Read a question and an answer; say what is wrong.",
        "estimated_minutes": "15", "reward": "2.50"}, follow=True)
    assert "created as a draft" in response.content.decode()
    study = ProlificStudy.objects.get(batch=batch)
    assert study.status == "UNPUBLISHED" and study.places == 3  # 6 items, 2 each
    assert study.total_cost_cents and study.total_cost_cents > 3 * 250  # the cost Prolific reports, fees included
    client.post(reverse("research-prolific-study", args=[batch.id]), {"action": "publish"})
    study.refresh_from_db()
    assert study.status == "ACTIVE"
    return study


def join(study: ProlificStudy, fake, pid: str) -> User:
    path = study.external_url.split("://", 1)[1].split("/", 1)[1].split("?")[0]
    participant = Client()
    response = participant.post(f"/{path}?PROLIFIC_PID={pid}&STUDY_ID={study.prolific_id}&SESSION_ID=s-{pid}")
    assert response.status_code == 302
    fake.start_submission(study.prolific_id, pid)
    return User.objects.get(external_id=pid, crowd_batch=study.batch)
