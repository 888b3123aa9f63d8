"""The one-statement reservation (PostgreSQL) writes what the ORM path writes, and hands back saved instances."""

import pytest
from django.db import connection

from annotate.models import Assignment, Round, Session
from annotate.queue import services as queue
from annotate.server import single_statement
from tests.annotate.helpers import field_values
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the one-statement path runs on PostgreSQL only"),
]

VOLATILE = {"id", "annotator", "work_item", "assignment", "session", "created_at", "started_at", "lease_expires_at", "task"}


def stored(instance):
    """Every concrete field's value as the database has it now."""
    return field_values(type(instance).objects.get(pk=instance.pk))


def reserved(annotator, batch):
    assignment = queue.assignment_next(annotator=annotator, batch=batch)
    return assignment, assignment.session, assignment.session.rounds.get()


def comparable(instance):
    return {k: v for k, v in stored(instance).items() if k.removesuffix("_id") not in VOLATILE}


def no_dispatch_calls():
    from annotate.sessions import services as sessions

    return [(call.args, call.kwargs) for call in sessions.round_generation_queue.call_args_list]


def test_returned_instances_are_the_stored_rows(no_dispatch, django_assert_num_queries):
    batch = make_batch(models=[ModelConfigFactory()], tasks=2)
    assignment = queue.assignment_next(annotator=UserFactory(), batch=batch)
    with django_assert_num_queries(0):  # the item, its model, the session are attached
        session, config = assignment.session, assignment.work_item.model_config
        assert config.queue_name and config.time_limit
    first_round = Round.objects.get(session=session)
    for instance in (assignment, assignment.work_item, session):
        assert field_values(instance) == stored(instance), type(instance).__name__
    assert (session.status, first_round.index, first_round.generation_status) == (
        Session.Status.GENERATING, 0, Round.Generation.QUEUED)
    assert assignment.work_item.active_count == 1
    assert no_dispatch_calls() == [((first_round.id, config), {})]


def test_it_writes_what_the_orm_path_writes(no_dispatch, monkeypatch):
    batch = make_batch(models=[ModelConfigFactory()], tasks=2)
    one_statement = reserved(UserFactory(), batch)
    monkeypatch.setattr(single_statement, "supported", lambda: False)
    orm = reserved(UserFactory(), batch)
    for ours, theirs in zip(one_statement, orm, strict=True):
        assert comparable(ours) == comparable(theirs), type(ours).__name__


def test_nothing_is_written_when_no_item_is_free(no_dispatch):
    batch = make_batch(models=[ModelConfigFactory()], tasks=1)
    assert queue.assignment_next(annotator=UserFactory(), batch=batch) is not None
    counts = Assignment.objects.count(), Session.objects.count(), Round.objects.count()
    assert queue.assignment_next(annotator=UserFactory(), batch=batch) is None  # overlap 1, the item is taken
    assert (Assignment.objects.count(), Session.objects.count(), Round.objects.count()) == counts
    assert len(no_dispatch_calls()) == 1


def awaiting_feedback():
    batch = make_batch(models=[ModelConfigFactory()], tasks=1)
    session = queue.assignment_next(annotator=UserFactory(), batch=batch).session
    Session.objects.filter(pk=session.pk).update(status=Session.Status.AWAITING_FEEDBACK, feedback_draft="typing")
    session.refresh_from_db()
    return session


def claim(session, rnd):
    return single_statement.insert_after_conditional_update(
        rnd, parent=session, link="session", expect={"status": Session.Status.AWAITING_FEEDBACK},
        changes={"status": Session.Status.GENERATING, "feedback_draft": ""})


def test_the_child_is_inserted_when_the_parent_still_matches(no_dispatch):
    session = awaiting_feedback()
    rnd = Round(session=session, index=1, feedback_text="Look again.", client_request_id="r1", typing_ms=900)
    assert claim(session, rnd) is True
    assert field_values(rnd) == stored(rnd) and rnd.session is session
    assert field_values(session) == stored(session)
    assert (session.status, session.feedback_draft) == (Session.Status.GENERATING, "")


def test_nothing_is_written_when_the_parent_moved_on(no_dispatch):
    session = awaiting_feedback()
    Session.objects.filter(pk=session.pk).update(status=Session.Status.COMPLETED)
    rnd = Round(session=session, index=1, feedback_text="Look again.", client_request_id="r1")
    assert claim(session, rnd) is False
    assert rnd.pk is None and session.rounds.count() == 1
    assert stored(session)["feedback_draft"] == "typing"


def test_a_model_with_a_database_default_is_refused_by_a_system_check(monkeypatch):
    from django.core.checks import run_checks
    from django.db import models
    from django.test.utils import isolate_apps

    from annotate.server import single_statement

    assert "feedback_lab.E002" not in {message.id for message in run_checks()}  # today's models are fine
    with isolate_apps("annotate"):
        class WithDatabaseDefault(models.Model):
            counted = models.IntegerField(db_default=0)

            class Meta:
                app_label = "annotate"

        monkeypatch.setattr(single_statement, "INSERTED_MODELS", (*single_statement.INSERTED_MODELS,
                                                                 WithDatabaseDefault))
        errors = [message for message in run_checks() if message.id == "feedback_lab.E002"]
    assert len(errors) == 1 and "WithDatabaseDefault.counted" in errors[0].msg
