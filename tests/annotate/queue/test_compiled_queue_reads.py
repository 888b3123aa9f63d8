"""The next item's reads compiled once per process (annotate.server.compiled_reads): the instances built from their
rows are the ORM's, relations included. The whole suite runs with the per-call check on (tests/env_defaults.py), so
every serving test also compares each statement sent with what the ORM compiles for the same values."""

import pytest
from django.db import transaction

from annotate.models import Assignment, Batch, User
from annotate.queue import services as queue
from annotate.queue.reservation import Claim, reservation_take
from tests.compiled_reads_checks import both_ways, columns_of, postgresql_only
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("no_dispatch"),
    postgresql_only,
]


@pytest.fixture
def two_model_batch(db):
    models = [ModelConfigFactory(name="sim-a", backend_settings={"chunk_delay": 0}),
              ModelConfigFactory(name="sim-b", backend_settings={"chunk_delay": 0})]
    return make_batch(models=models, tasks=6, overlap=2)


def test_the_latest_assignment_is_the_orms_with_its_item_batch_and_session(two_model_batch, annotator,
                                                                         django_assert_num_queries):
    queue.assignment_next(annotator=annotator)
    kept, orm = both_ways(lambda: queue._latest_assignment(annotator))
    assert kept is not None and orm is not None
    for part in (lambda a: a, lambda a: a.work_item, lambda a: a.work_item.batch, lambda a: a.session):
        assert columns_of(part(kept)) == columns_of(part(orm))
    with django_assert_num_queries(0):  # loaded with it, as select_related loads them
        assert kept.work_item.batch.serving_models == orm.work_item.batch.serving_models  # JSON decoded
        assert kept.session.assignment is kept
    kept.refresh_from_db()
    assert kept.status == Assignment.Status.ACTIVE  # an instance the ORM can save and reload


def test_a_newcomer_has_no_latest_assignment(annotator):
    assert both_ways(lambda: queue._latest_assignment(annotator)) == (None, None)


def test_the_item_a_reservation_takes_is_the_orms_first_free_with_its_model(two_model_batch, annotator):
    """Taken in one statement (with the kept SQL, then with the SQL compiled afresh) and by the ORM's saves: the
    same item, built with its model, each time rolled back."""
    batch, model_id = two_model_batch, two_model_batch.serving_models[1]
    shape, values = queue._free_walk("ordinary", batch, annotator.pk, last_task_id=None, model_id=model_id)

    def taken(one_statement=True):
        with transaction.atomic():
            claim = Claim(annotator.pk, 0, 1, batch.pk, with_session=True)
            item = reservation_take(queue._free_items, shape, values, claim, one_statement=one_statement).item
            transaction.set_rollback(True)
        return columns_of(item), columns_of(item.model_config)

    kept, fresh = both_ways(taken)
    assert kept == fresh == taken(one_statement=False) and kept[0]["model_config_id"] == model_id


def test_the_open_batches_are_the_orms(two_model_batch, annotator):
    other = make_batch(models=[ModelConfigFactory(name="sim-c")], tasks=2)
    Batch.objects.filter(pk=other.pk).update(status=Batch.Status.CLOSED)
    make_batch(models=[ModelConfigFactory(name="sim-d")], tasks=2)
    kept, orm = both_ways(lambda: sorted((columns_of(b) for b in queue._open_batches(annotator)),
                                         key=lambda b: b["id"]))
    assert kept == orm and len(kept) == 2


def test_a_participant_is_served_only_their_batch(two_model_batch):
    make_batch(models=[ModelConfigFactory(name="sim-e")], tasks=2)
    participant = UserFactory(username="p1", role=User.Role.ANNOTATOR, crowd_batch=two_model_batch)
    kept, orm = both_ways(lambda: [b.pk for b in queue._open_batches(participant)])
    assert kept == orm == [two_model_batch.pk]
