"""Query counts of the hot path: reserving a fresh item and submitting feedback (resume and session reads are in
test_session_apis.py). They stay flat as the batch and the annotator's history grow."""


import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotate.assignments import assignment_complete
from annotate.models import Round, Session
from annotate.queue.gold import planned_positions
from tests.factories import make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]



def reserve(api_client, batch):
    with CaptureQueriesContext(connection) as queries:
        response = api_client.post(reverse("api-next"), {"batch": batch.name}, format="json")
    assert response.status_code == 200
    return response.json()["session_id"], len(queries)


def answered(session_id):
    Round.objects.filter(session_id=session_id).update(generation_status=Round.Generation.DONE, answer_text="1",
                                                       final_verdict=False, auto_verdict=False)
    Session.objects.filter(pk=session_id).update(status=Session.Status.AWAITING_FEEDBACK)


def submit(api_client, session_id, n):
    with CaptureQueriesContext(connection) as queries:
        response = api_client.post(reverse("api-session-feedback", args=[session_id]),
                                   {"feedback": "Look again.", "client_request_id": f"r{n}"}, format="json")
    assert response.status_code == 201
    return len(queries)


def finish(session_id):
    session = Session.objects.get(pk=session_id)
    Session.objects.filter(pk=session_id).update(status=Session.Status.COMPLETED)
    assignment_complete(assignment_id=session.assignment_id)


@pytest.mark.parametrize("gold_rate", [0.0, 0.25])
def test_next_item_and_submit_query_counts_are_flat(api_client, annotator, simulated_model, gold_rate):
    batch = make_batch(models=[simulated_model], tasks=30)
    gold = list(batch.tasks.values_list("id", flat=True)[:5])
    batch.tasks.filter(id__in=gold).update(is_gold=True)
    batch.work_items.filter(task_id__in=gold).update(is_check=True)
    batch.gold_rate = gold_rate
    batch.save()
    api_client.force_authenticate(annotator)
    next_counts, submit_counts = [], []
    for n in range(8):
        session_id, count = reserve(api_client, batch)
        next_counts.append(count)
        answered(session_id)
        submit_counts.append(submit(api_client, session_id, n))
        finish(session_id)
    # A fresh reservation on PostgreSQL: the annotator's row (their serving version, read with whether items are
    # pinned to them, whether an open batch names them and whether they have had an item), their latest assignment
    # with its item and batch (resume, last task, and the batch named when it is theirs: a newcomer reads the batch
    # by its name instead), the checks served so far once the annotator's plan has placed one
    # (annotate.queue.gold), and one statement that takes the first free item (or check) with its model, counts it
    # and writes the assignment, the session and round 0 if the version still holds (annotate.queue.reservation).
    # No transaction around them. Elsewhere the same reads in one transaction (its savepoint and release counted
    # here), and the reservation's ORM steps in a nested one.
    planned = [bool(planned_positions(seed=batch.serving_seed, annotator_id=annotator.pk, rate=gold_rate, share=None,
                                      up_to=position)) for position in range(1, 9)]
    reads = [3 if connection.vendor == "postgresql" else 14 - (position > 0) for position in range(8)]
    expected = [reads[position] + planned[position] for position in range(8)]
    assert next_counts == expected, next_counts
    # A submit: the session with its ownership check, its rounds, the new round saved as the session moves on (the
    # transaction's markers, the session's update and the insert), and the snapshot's images (its rounds are those
    # the submit already holds).
    assert submit_counts == [7] * 8, submit_counts
