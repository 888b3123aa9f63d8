"""The dashboard's numbers are honest (issue 30 items 12-13): the pace over the time work actually happened, failed
model calls counted over time and kept after Retry, categories in the batch's order, empty tables that say so."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate.models import Assignment, Batch, RoundFailure
from annotate.queue.services import assignment_next
from annotate.sessions.generation import round_claim, round_fail
from annotate.sessions.services import round_retry
from annotate.watch.selectors import batch_dashboard
from tests.annotate.helpers import finish
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


def worked(assignment: Assignment, *, began: timedelta, ended: timedelta | None, now) -> None:
    """Set when an item was taken and finished (ago)."""
    Assignment.objects.filter(pk=assignment.pk).update(
        created_at=now - began, finished_at=None if ended is None else now - ended)


def test_the_pace_is_over_the_time_work_happened():
    """25 items done in the last 15 minutes is 100 per hour, not 25 / 3 h (8.33): the hours are those in which
    someone held an item, within the last 3 h."""
    batch = make_batch(models=[ModelConfigFactory()], tasks=40)
    now = timezone.now()
    for i in range(25):
        assignment = assignment_next(annotator=UserFactory(), batch=batch)
        finish(assignment)
        worked(assignment, began=timedelta(minutes=15 - i * 0.6), ended=timedelta(minutes=14.4 - i * 0.6), now=now)
    d = batch_dashboard(batch, now=now)
    assert d["pace_hours_worked"] == pytest.approx(0.25, abs=0.01)
    assert d["pace_per_hour"] == pytest.approx(100, abs=1)
    assert d["eta_seconds"] == pytest.approx(15 / 100 * 3600, rel=0.02)  # 15 items left at 100 per hour


def test_hours_nobody_worked_do_not_count():
    """Two bursts of 10 minutes, two hours apart: the pace is over 20 minutes of work."""
    batch = make_batch(models=[ModelConfigFactory()], tasks=10)
    now = timezone.now()
    for i in range(6):
        assignment = assignment_next(annotator=UserFactory(), batch=batch)
        finish(assignment)
        start = timedelta(minutes=130) if i < 3 else timedelta(minutes=10)
        worked(assignment, began=start, ended=start - timedelta(minutes=10), now=now)
    under_way = assignment_next(annotator=UserFactory(), batch=batch)  # held now: counted until now
    worked(under_way, began=timedelta(minutes=5), ended=None, now=now)
    d = batch_dashboard(batch, now=now)
    assert d["pace_hours_worked"] == pytest.approx(20 / 60, abs=0.01)  # 10 + 10 min (the last 5 overlap them)
    assert d["pace_per_hour"] == pytest.approx(18, abs=0.1)


def _fail(session, text="HTTP 500 from the model server") -> None:
    rnd = session.rounds.order_by("-index").first()
    assert round_claim(round_id=rnd.id, claim_token=f"t-{rnd.id}-{timezone.now().timestamp()}")
    rnd.refresh_from_db()
    round_fail(round_id=rnd.id, claim_token=rnd.claim_token, message=text)


def test_failed_model_calls_are_counted_over_time_and_kept_after_retry():
    models = [ModelConfigFactory(name="fails-a", display_name="Model A"), ModelConfigFactory(name="fails-b")]
    batch = make_batch(models=models, tasks=2)
    person = UserFactory()
    session = assignment_next(annotator=person, batch=batch).session
    _fail(session)
    round_retry(session_id=session.id, annotator=person)  # the Retry button: the round is queued again
    _fail(session)
    round_retry(session_id=session.id, annotator=person)
    d = batch_dashboard(batch)
    model = session.model_config.display_name or session.model_config.name
    assert d["model_errors"] == [{"model": model, "last_hour": 2, "total": 2, "failing_now": 0, "latest": ""}]
    RoundFailure.objects.filter(round__session=session).update(failed_at=timezone.now() - timedelta(hours=2))
    _fail(session)
    errors = batch_dashboard(batch)["model_errors"]
    assert [{**row, "latest": row["latest"][:30]} for row in errors] == [
        {"model": model, "last_hour": 1, "total": 3, "failing_now": 1, "latest": "HTTP 500 from the model server"}]


def test_categories_follow_the_batch_order_and_empty_tables_say_so(client, researcher):
    batch = make_batch(models=[ModelConfigFactory()], tasks=1, category="Visual Logic", members=[researcher])
    for category in ("MMMU-Pro", "Coding (Text)"):
        batch.tasks.create(external_id=f"x-{category}", category=category, question="?", answer_type="number",
                           ground_truth="1")
    Batch.objects.filter(pk=batch.pk).update(category_order=["MMMU-Pro", "Visual Logic", "Coding (Text)"])
    from annotate.queue.services import work_items_create_for_batch

    batch.refresh_from_db()
    work_items_create_for_batch(batch=batch)
    d = batch_dashboard(batch)
    assert [row["name"] for row in d["by_category"]] == ["MMMU-Pro", "Visual Logic", "Coding (Text)"]
    client.force_login(researcher)
    page = client.get(reverse("research-dashboard", args=[batch.id])).content.decode()
    for sentence in ("No failed model calls.", "No skips.", "No model is marked unavailable."):
        assert sentence in page
