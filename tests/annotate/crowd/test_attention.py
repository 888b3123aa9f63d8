"""Attention checks: gold items judged by hand, scored against the automatic check of the model's answer. Each
participant's failures are counted, flag them on the quality page, and end their participation once the study's
limit is reached (the item under way finishes first; nothing more is served, no completion code)."""

import pytest
from django.urls import reverse

from annotate.crowd import services as crowd
from annotate.crowd.attention import attention_checks
from annotate.crowd.study import study_update
from annotate.models import Batch, Participation, Session
from annotate.queue.services import assignment_next
from annotate.sessions.services import round_record_verdict
from evaluation.quality.selectors import batch_quality
from tests.annotate.crowd.study_data import join
from tests.annotate.helpers import finish, run_pending_round
from tests.factories import make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


@pytest.fixture
def gold_batch(simulated_model):
    """Every item is an attention check: a gold manual task whose model answer is checked as a number."""
    batch = make_batch(models=[simulated_model], tasks=4, answer_type="manual", ground_truth="7391", is_gold=True,
                       metadata={"gold_check_type": "number"})
    Batch.objects.filter(pk=batch.pk).update(gold_rate=1.0)
    crowd.batch_set_completion_code(batch=batch, code="GOLD-DONE")
    batch.refresh_from_db()
    return batch


def judge(user, correct: bool, capture) -> Session:
    session = assignment_next(annotator=user).session
    run_pending_round(session)  # the simulated student answers wrong first
    assert session.status == Session.Status.AWAITING_VERDICT
    with capture(execute=True):  # the completed session's listeners run after the commit
        round_record_verdict(session_id=session.id, correct=correct, annotator=user)
    session.refresh_from_db()
    if session.status == Session.Status.AWAITING_FEEDBACK:  # "wrong", rightly: feedback rounds would follow
        finish(session.assignment)
    return session


def test_failing_as_many_checks_as_allowed_ends_the_participation(client, gold_batch,
                                                                  django_capture_on_commit_callbacks):
    study_update(batch=gold_batch, settings={"max_attention_failures": 2})
    user = join(client, gold_batch)
    judge(user, False, django_capture_on_commit_callbacks)  # "wrong" for a wrong answer: the check is met
    session = judge(user, True, django_capture_on_commit_callbacks)  # "correct" for a wrong answer: failed
    assert session.status == Session.Status.COMPLETED
    checks = attention_checks(gold_batch)[user.pk]
    assert (checks.checked, checks.failed) == (2, 1)
    assert Participation.objects.get(user=user).ended_at is None  # one failure of two allowed
    judge(user, True, django_capture_on_commit_callbacks)
    participation = Participation.objects.get(user=user)
    assert participation.end_reason == "attention"
    assert assignment_next(annotator=user) is None
    page = client.get(reverse("crowd-study")).content.decode()
    assert "attention checks" in page and "GOLD-DONE" not in page
    row = next(r for r in batch_quality(gold_batch).annotators if r.annotator_id == user.pk)
    assert (row.attention_checks, row.attention_failed, row.flagged) == (3, 2, True)


def test_without_a_limit_failures_are_counted_and_flagged_only(client, gold_batch,
                                                              django_capture_on_commit_callbacks):
    user = join(client, gold_batch)
    for _ in range(2):
        judge(user, True, django_capture_on_commit_callbacks)
    assert Participation.objects.get(user=user).ended_at is None
    assert assignment_next(annotator=user) is not None
    row = next(r for r in batch_quality(gold_batch).annotators if r.annotator_id == user.pk)
    assert row.attention_failed == 2 and row.flagged  # Prolific's two failures flag them
