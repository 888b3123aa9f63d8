"""The annotator's home counts every kind of work: InterFeedback sessions, FIRE conversations, preference items."""

import pytest

from annotate.models import Assignment
from annotate.queue.services import assignment_next
from annotate.sessions.selectors import annotator_progress
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


def test_every_kind_of_work_is_counted(fire_batch, client):
    annotator = UserFactory(username="multi")
    interfeedback = make_batch(models=[ModelConfigFactory(name="home-m")], tasks=2)
    first = assignment_next(annotator=annotator, batch=interfeedback)
    Assignment.objects.filter(pk=first.pk).update(status=Assignment.Status.COMPLETED)
    fire = assignment_next(annotator=annotator, batch=fire_batch)
    Assignment.objects.filter(pk=fire.pk).update(status=Assignment.Status.COMPLETED)
    assignment_next(annotator=annotator, batch=interfeedback)  # under way (one item at a time: the last one)

    progress = annotator_progress(annotator)
    assert (progress["completed"], progress["in_progress"]) == (2, 1)
    assert progress["by_kind"] == [
        {"label": "InterFeedback sessions", "completed": 1, "in_progress": 1},
        {"label": "FIRE conversations", "completed": 1, "in_progress": 0},
    ]
    client.force_login(annotator)
    page = client.get("/?annotate=1").content.decode()
    assert "FIRE conversations: 1 done" in page and "InterFeedback sessions: 1 done, 1 in progress" in page
