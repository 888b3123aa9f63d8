"""Every query of the annotator's hot requests, as a client makes them: with an API token, and no test transaction
around them, so the requests' own transactions count as they run in production (BEGIN and COMMIT are counted
here, as Django logs them). The bars are pinned so that a change that adds a query to these paths fails here
first; annotate.queue.services says what each query does."""

import pytest
from django.db import connection
from django.urls import reverse

from annotate.assignments import assignment_complete
from annotate.models import Round, Session
from tests.factories import make_batch

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("no_dispatch")]

# A fresh item for a returning annotator: the token (with its user), their row (their serving version, read with
# whether something is pinned to them, whether an open batch names them and whether they have had an item), their
# latest assignment with its item, batch and session, and one statement that takes the first free item with its
# model, counts it and writes the assignment, the session and its round 0 if their version still holds. No
# transaction around them (annotate.queue.reservation). SQLite: the same in a transaction, and the reservation's
# ORM steps (the person's version checked, the item read, the version bumped, the count and three inserts) in a
# nested one.
RETURNING_NEXT = 4 if connection.vendor == "postgresql" else 14
# A newcomer: no latest assignment to read (SQLite reads it), and instead the open batches that may serve them (with
# several, the first item of each too).
NEWCOMER_NEXT = RETURNING_NEXT + (connection.vendor != "postgresql")
# A submit: the token, the session (with its task, batch and model, its owner checked), its rounds, BEGIN, the
# session moving on, the new round, COMMIT, and the snapshot's images.
SUBMIT = 8
# A draft autosave: the token, and one conditional update of the session.
DRAFT = 2


def next_item(client, batch=None):
    response = client.post(reverse("api-next"), {} if batch is None else {"batch": batch.name}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["state"] == "item"
    return response.json()["session_id"]


def answered(session_id):
    Round.objects.filter(session_id=session_id).update(generation_status=Round.Generation.DONE, answer_text="1",
                                                       final_verdict=False, auto_verdict=False)
    Session.objects.filter(pk=session_id).update(status=Session.Status.AWAITING_FEEDBACK)


def finished(session_id):
    Session.objects.filter(pk=session_id).update(status=Session.Status.COMPLETED)
    assignment_complete(assignment_id=Session.objects.get(pk=session_id).assignment_id)


def test_a_newcomers_first_item(client_of, simulated_model, django_assert_max_num_queries):
    make_batch(models=[simulated_model], tasks=20)
    with django_assert_max_num_queries(NEWCOMER_NEXT):
        next_item(client_of)


def test_a_returning_annotators_next_item_submit_and_draft(client_of, simulated_model, django_assert_max_num_queries):
    make_batch(models=[simulated_model], tasks=20)
    for n in range(4):  # flat as their history grows
        if n == 0:
            session_id = next_item(client_of)
        else:
            with django_assert_max_num_queries(RETURNING_NEXT):
                session_id = next_item(client_of)
        answered(session_id)
        with django_assert_max_num_queries(DRAFT):
            response = client_of.post(reverse("api-session-draft", args=[session_id]), {"draft": "Look"},
                                      format="json")
        assert response.status_code == 204
        with django_assert_max_num_queries(SUBMIT):
            response = client_of.post(reverse("api-session-feedback", args=[session_id]),
                                      {"feedback": "Look again.", "client_request_id": f"r{n}"}, format="json")
        assert response.status_code == 201
        finished(session_id)


def test_naming_the_batch_walked_costs_no_query(client_of, simulated_model, django_assert_max_num_queries):
    """An API client names its batch in each request: the batch is the one read with the latest assignment, so a
    returning annotator's next item stays at its count; a newcomer's reads the batch by its name instead of the
    open batches."""
    batch = make_batch(models=[simulated_model], tasks=20)
    with django_assert_max_num_queries(NEWCOMER_NEXT):
        session_id = next_item(client_of, batch)
    for _ in range(3):
        answered(session_id)
        finished(session_id)
        with django_assert_max_num_queries(RETURNING_NEXT):
            session_id = next_item(client_of, batch)


def test_naming_another_batch_reads_it_by_name(client_of, simulated_model, django_assert_max_num_queries):
    """Another batch than their latest's: read by its name, and their previous item in it (their place in its
    sequence), as before the batch named was read with the latest assignment."""
    first, other = make_batch(models=[simulated_model], tasks=5), make_batch(models=[simulated_model], tasks=5)
    session_id = next_item(client_of, first)
    answered(session_id)
    finished(session_id)
    with django_assert_max_num_queries(RETURNING_NEXT + 2):
        next_item(client_of, other)


def test_resuming_the_item_under_way(client_of, simulated_model, django_assert_max_num_queries):
    """The token, the person's row, their latest assignment (with its item, batch and session), the lease renewed."""
    make_batch(models=[simulated_model], tasks=5)
    session_id = next_item(client_of)
    with django_assert_max_num_queries(4 if connection.vendor == "postgresql" else 6):
        assert next_item(client_of) == session_id
