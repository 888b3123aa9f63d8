"""A session's reads compiled once per process (annotate.server.compiled_reads): the session with its task, model
and batch, its rounds and its images come out as the ORM gives them, and only the owner's session is found where
an annotator is named."""

import pytest

from annotate.models import Round
from annotate.queue.services import assignment_next
from annotate.sessions.selectors import rounds_in_order, session_with_task, task_image_urls
from tests.compiled_reads_checks import both_ways, columns_of, postgresql_only
from tests.factories import attach_image, make_batch

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("no_dispatch"),
    postgresql_only,
]


@pytest.fixture
def session(annotator, simulated_model):
    batch = make_batch(models=[simulated_model], tasks=1)
    task = batch.tasks.get()
    attach_image(task, "red")
    attach_image(task, "blue")
    session = assignment_next(annotator=annotator, batch=batch).session
    Round.objects.filter(session=session).update(answer_text="41", generation_status=Round.Generation.DONE)
    Round.objects.create(session=session, index=1, feedback_text="Count again.")
    return session


def test_the_session_comes_with_its_task_model_and_batch_as_the_orm_gives_them(session, annotator, outsider,
                                                                               django_assert_num_queries):
    for annotator_id in (None, annotator.pk):
        kept, orm = both_ways(lambda: session_with_task(session.pk, annotator_id))  # noqa: B023
        for part in (lambda s: s, lambda s: s.task, lambda s: s.model_config, lambda s: s.batch):
            assert columns_of(part(kept)) == columns_of(part(orm))
        with django_assert_num_queries(0):
            assert kept.task.question and kept.model_config.name and kept.batch.serving_models == orm.batch.serving_models
    assert both_ways(lambda: session_with_task(session.pk, outsider.pk)) == (None, None)
    assert both_ways(lambda: session_with_task(10**26)) == (None, None)


def test_its_rounds_and_images_in_order(session):
    kept, orm = both_ways(lambda: [columns_of(r) for r in rounds_in_order(session.pk)])
    assert kept == orm and [r["index"] for r in kept] == [0, 1]
    kept, orm = both_ways(lambda: task_image_urls(session.task_id))
    assert kept == orm and len(kept) == 2
