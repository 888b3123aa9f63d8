"""The annotator's home counts every kind of work: InterFeedback sessions, FIRE conversations, preference items."""

import pytest

from annotate.models import Assignment
from annotate.queue import views as queue_views
from annotate.queue.services import assignment_next, open_items_count
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


def test_remaining_counts_tasks_items_and_conversations_and_stops_at_its_cap(fire_batch, client, monkeypatch):
    """One per task of an InterFeedback batch (two models, one task each per person), one per conversation; the
    count stops at ``up_to`` (each batch's count does), and the home page shows a capped count as "N+"."""
    annotator = UserFactory(username="counted")
    make_batch(models=[ModelConfigFactory(name="count-a"), ModelConfigFactory(name="count-b")], tasks=3)
    conversations = fire_batch.work_items.count()
    assert open_items_count(annotator=annotator) == 3 + conversations
    assert open_items_count(annotator=annotator, up_to=2) == 2
    assert open_items_count(annotator=annotator, up_to=4) == 4
    client.force_login(annotator)
    monkeypatch.setattr(queue_views, "REMAINING_SHOWN_UP_TO", 2)
    assert "Remaining: <strong>2+</strong>" in client.get("/").content.decode()
    monkeypatch.setattr(queue_views, "REMAINING_SHOWN_UP_TO", 100)
    assert f"Remaining: <strong>{3 + conversations}</strong>" in client.get("/").content.decode()
