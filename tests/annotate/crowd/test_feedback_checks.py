"""Attention checks on automatically checked items: scored by the person's first feedback against the words the
researchers expect a careful reader to name (meta.gold_feedback_terms), with nothing extra shown on the page."""

import pytest

from annotate.crowd.attention import attention_checks, feedback_mentions
from annotate.models import Batch
from annotate.queue.services import assignment_next
from tests.annotate.helpers import finish, run_pending_round, send_feedback
from tests.factories import UserFactory, make_batch

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("feedback, terms, mentioned", [
    ("Count the wheels again.", ["wheels"], True),
    ("count the WHEELS again", ["wheels"], True),
    ("Look at the café sign", ["cafe"], True),
    ("Look at the  left   side", ["left side"], True),
    ("The wheelset is odd", ["wheel"], False),  # whole words only
    ("Try again.", ["wheels", "tyres"], False),
    ("Anything", ["", "  "], False),
])
def test_feedback_mentions(feedback, terms, mentioned):
    assert feedback_mentions(feedback, terms) is mentioned


def test_a_feedback_check_passes_or_fails_on_the_first_feedback(no_dispatch, simulated_model):
    batch = make_batch(models=[simulated_model], tasks=2, answer_type="number", ground_truth="7", is_gold=True,
                       metadata={"gold_feedback_terms": ["wheels"]})
    Batch.objects.filter(pk=batch.pk).update(gold_rate=1.0)
    batch.refresh_from_db()
    careful, careless = UserFactory(), UserFactory()
    for person, feedback in ((careful, "Count the wheels once more."), (careless, "Wrong, try again.")):
        session = assignment_next(annotator=person, batch=batch).session
        run_pending_round(session)  # the simulated student is wrong first: feedback is asked
        send_feedback(session, feedback)
        finish(session.assignment)
    checks = attention_checks(batch)
    assert (checks[careful.pk].checked, checks[careful.pk].failed) == (1, 0)
    assert (checks[careless.pk].checked, checks[careless.pk].failed) == (1, 1)


def test_a_check_without_terms_is_unscored(no_dispatch, simulated_model):
    batch = make_batch(models=[simulated_model], tasks=1, answer_type="number", ground_truth="7", is_gold=True)
    Batch.objects.filter(pk=batch.pk).update(gold_rate=1.0)
    batch.refresh_from_db()
    person = UserFactory()
    session = assignment_next(annotator=person, batch=batch).session
    run_pending_round(session)
    send_feedback(session, "Count the wheels.")
    checks = attention_checks(batch)[person.pk]
    assert (checks.checked, checks.rounds_unscored) == (0, 1)
