"""Outcome counters: incremental updates equal a full recompute; counting is idempotent; jobs."""

from __future__ import annotations

import datetime as dt

import pytest

from annotate.models import Job, Session, User
from evaluation.exports.filters import ReportFilters
from evaluation.interfeedback import selectors, services
from evaluation.interfeedback import tasks as outcome_tasks
from evaluation.interfeedback.metrics import OutcomeCounts
from evaluation.models import NEVER, AnnotatorOutcomeCounter, BatchAggregate, CountedSession, OutcomeCounter
from tests.evaluation.builders import sessions_from_counts
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


def _snapshot(batch):
    return (
        sorted(OutcomeCounter.objects.filter(batch=batch, count__gt=0)
               .values_list("model_config_id", "category", "corrected_round", "count")),
        sorted(AnnotatorOutcomeCounter.objects.filter(batch=batch, count__gt=0)
               .values_list("annotator_id", "model_config_id", "category", "corrected_round", "count")),
        sorted(CountedSession.objects.filter(batch=batch)
               .values_list("session_id", "model_config_id", "category", "annotator_id", "corrected_round")),
    )


@pytest.fixture
def mixed_batch(db):
    model_a, model_b = ModelConfigFactory(name="model-a"), ModelConfigFactory(name="model-b")
    ann1 = UserFactory(username="ann1", role=User.Role.ANNOTATOR)
    ann2 = UserFactory(username="ann2", role=User.Role.ANNOTATOR)
    batch = make_batch(models=[model_a, model_b], tasks=0)
    sessions = [
        *sessions_from_counts(batch, model_a, "Visual Logic", (3, 2, 1, 1), 10, annotators=(ann1, ann2)),
        *sessions_from_counts(batch, model_a, "Math (Text)", (1, 0, 2, 0), 5, annotators=(ann2,)),
        *sessions_from_counts(batch, model_b, "Visual Logic", (4, 1, 0, 1), 7, annotators=(ann1, None)),
    ]
    # Not completed: never counted.
    Session.objects.create(batch=batch, task=sessions[0].task, model_config=model_a, annotator=ann1,
                           status=Session.Status.AWAITING_FEEDBACK)
    return batch, sessions


def test_incremental_counters_equal_full_recompute(mixed_batch):
    batch, sessions = mixed_batch
    for session in sessions:
        assert outcome_tasks.outcome_record(session.id) is True  # the Celery task, called directly
    incremental = _snapshot(batch)
    report = services.outcome_recompute(batch_id=batch.id)
    assert report["sessions"] == len(sessions) == 22
    assert _snapshot(batch) == incremental
    assert selectors.outcome_counts(batch) == {
        ("model-a", "Math (Text)"): OutcomeCounts(5, (1, 0, 2, 0)),
        ("model-a", "Visual Logic"): OutcomeCounts(10, (3, 2, 1, 1)),
        ("model-b", "Visual Logic"): OutcomeCounts(7, (4, 1, 0, 1)),
    }


def test_outcome_record_counts_a_session_once(mixed_batch):
    batch, sessions = mixed_batch
    first = sessions[0]
    assert services.outcome_record(session_id=first.id) is True
    assert services.outcome_record(session_id=first.id) is False  # a redelivered task changes nothing
    assert outcome_tasks.outcome_record(first.id) is False
    assert CountedSession.objects.filter(session_id=first.id).count() == 1
    assert OutcomeCounter.objects.get(batch=batch, category="Visual Logic", corrected_round=0).count == 1
    assert BatchAggregate.objects.get(batch=batch).updated_at is not None


def test_outcome_record_after_recompute_does_not_double_count(mixed_batch):
    batch, sessions = mixed_batch
    services.outcome_recompute(batch_id=batch.id)
    before = _snapshot(batch)
    for session in sessions:
        assert services.outcome_record(session_id=session.id) is False
    assert _snapshot(batch) == before


def test_changed_outcome_moves_the_session_between_counters(mixed_batch):
    batch, sessions = mixed_batch
    for session in sessions:
        services.outcome_record(session_id=session.id)
    never_session = next(s for s in sessions if s.corrected_round is None and s.annotator_id)
    Session.objects.filter(pk=never_session.id).update(corrected_round=3)  # e.g. a reviewer's override
    assert services.outcome_record(session_id=never_session.id) is True
    incremental = _snapshot(batch)
    services.outcome_recompute(batch_id=batch.id)
    assert _snapshot(batch) == incremental
    assert CountedSession.objects.get(session_id=never_session.id).corrected_round == 3


def test_sessions_not_completed_or_missing_are_ignored(mixed_batch):
    batch, _ = mixed_batch
    pending = Session.objects.get(batch=batch, status=Session.Status.AWAITING_FEEDBACK)
    assert services.outcome_record(session_id=pending.id) is False
    assert services.outcome_record(session_id=10**9) is False
    assert not CountedSession.objects.filter(batch=batch).exists()


def test_filters_served_by_counters_and_by_date_agree(mixed_batch):
    batch, sessions = mixed_batch
    services.outcome_recompute(batch_id=batch.id)
    pseudonym = User.objects.get(username="ann2").pseudonym
    wide = ReportFilters(date_from=dt.date(2025, 1, 1), date_to=dt.date(2025, 12, 31))
    assert selectors.outcome_counts(batch, wide) == selectors.outcome_counts(batch)
    by_counter = selectors.outcome_counts(batch, ReportFilters(annotator=pseudonym, model="model-a"))
    by_date = selectors.outcome_counts(batch, ReportFilters(annotator=pseudonym, model="model-a",
                                                            date_from=dt.date(2025, 3, 1)))
    assert by_counter == by_date
    assert by_counter == {
        ("model-a", "Math (Text)"): OutcomeCounts(5, (1, 0, 2, 0)),
        ("model-a", "Visual Logic"): OutcomeCounts(5, (1, 1, 1, 0)),  # 2nd, 4th, ... of [0,0,0,1,1,2,3,N,N,N]
    }
    assert selectors.outcome_counts(batch, ReportFilters(date_to=dt.date(2025, 2, 28))) == {}
    breakdown = {row.pseudonym: row.counts for row in selectors.annotator_breakdown(batch)}
    dated = {row.pseudonym: row.counts for row in selectors.annotator_breakdown(batch, wide)}
    assert breakdown == dated
    full, ranged = selectors.batch_report(batch), selectors.batch_report(batch, wide)
    assert (ranged.counts, ranged.annotators) == (full.counts, full.annotators)
    assert sum(c.sessions for c in breakdown.values()) == 22 - 3  # model-b's sessions without an annotator


def test_recompute_job_runs_once(mixed_batch, django_capture_on_commit_callbacks, monkeypatch):
    batch, _ = mixed_batch
    sent = []
    monkeypatch.setattr("annotate.queue_contract.send_task", lambda name, args, **kw: sent.append(args))
    with django_capture_on_commit_callbacks(execute=True):
        job = services.recompute_job_create(batch=batch)
    assert sent == [[job.id]] and job.kind == Job.Kind.AGGREGATE and job.status == Job.Status.QUEUED
    outcome_tasks.outcome_recompute(job.id)
    job.refresh_from_db()
    assert (job.status, job.progress, job.report["sessions"]) == (Job.Status.SUCCEEDED, 1.0, 22)
    assert services.recompute_job_run(job_id=job.id) is None  # already taken: a redelivery does nothing
    assert BatchAggregate.objects.get(batch=batch).recomputed_at is not None


def test_recompute_job_fails_clearly_when_the_broker_is_down(mixed_batch, django_capture_on_commit_callbacks,
                                                              monkeypatch):
    batch, _ = mixed_batch

    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("redis refused the connection")

    monkeypatch.setattr("annotate.queue_contract.send_task", refuse)
    with django_capture_on_commit_callbacks(execute=True):
        job = services.recompute_job_create(batch=batch)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert "Could not reach the task queue" in job.error
    assert not CountedSession.objects.filter(batch=batch).exists()  # not silently run in-process


def test_never_sentinel_round_trips():
    assert NEVER == -1


def test_recompute_repairs_drift(mixed_batch):
    batch, sessions = mixed_batch
    services.outcome_recompute(batch_id=batch.id)
    expected = _snapshot(batch)
    # Drift of every kind: a lost CountedSession row, a wrong counter, a stale outcome, a session gone back.
    CountedSession.objects.filter(session_id=sessions[0].id).delete()
    OutcomeCounter.objects.filter(batch=batch).update(count=999)
    CountedSession.objects.filter(session_id=sessions[1].id).update(corrected_round=NEVER)
    report = services.outcome_recompute(batch_id=batch.id)
    assert (report["removed"], report["added"]) == (1, 2)
    assert _snapshot(batch) == expected
    Session.objects.filter(pk=sessions[2].id).update(status=Session.Status.ABANDONED)
    report = services.outcome_recompute(batch_id=batch.id)
    assert (report["sessions"], report["removed"], report["added"]) == (21, 1, 0)
    assert services.outcome_recompute(batch_id=batch.id)["removed"] == 0  # nothing drifted: nothing written


def test_a_running_job_whose_worker_died_can_be_taken_again(mixed_batch):
    batch, _ = mixed_batch
    job = Job.objects.create(kind=Job.Kind.AGGREGATE, batch=batch, status=Job.Status.RUNNING,
                             started_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1))
    assert services.recompute_job_run(job_id=job.id) is None  # still within its time limit: someone has it
    Job.objects.filter(pk=job.id).update(started_at=dt.datetime.now(dt.UTC) - dt.timedelta(hours=1))
    assert services.recompute_job_run(job_id=job.id).status == Job.Status.SUCCEEDED
