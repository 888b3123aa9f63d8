"""ratings_save: drafts, the final "Save scores and next", validation, idempotency, assignment completion."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotate.errors import ApplicationError, Conflict, NotFound
from annotate.models import Assignment, Rating, WorkItem
from annotate.queue.services import assignment_next
from annotate.rating.fire.services import ratings_save
from annotate.rating.selectors import conversation_payload
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

# The sample's first conversation (4 turns) is served first; its rateable turns are 1, 2, 3.
FULL = {1: (4, "clear hint"), 2: (3, ""), 3: (5, "")}


@pytest.fixture
def reserved(fire_batch, annotator):
    assignment = assignment_next(annotator=annotator)
    return assignment, assignment.work_item.conversation


def test_final_save_scores_every_turn_and_completes_the_assignment(reserved, annotator):
    assignment, conversation = reserved
    result = ratings_save(annotator=annotator, conversation_id=conversation.id, scores=FULL,
                          client_request_id="req-1", final=True)
    assert (result.saved, result.final, result.replayed) == (3, True, False)
    ratings = Rating.objects.filter(annotator=annotator).order_by("turn__index")
    assert [(r.turn.index, r.score, r.comment, r.is_final) for r in ratings] == [
        (1, 4, "clear hint", True), (2, 3, "", True), (3, 5, "", True)]
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.COMPLETED
    assert WorkItem.objects.get(pk=assignment.work_item_id).completed_count == 1


def test_drafts_are_partial_and_come_back_on_the_page(reserved, annotator):
    assignment, conversation = reserved
    ratings_save(annotator=annotator, conversation_id=conversation.id, scores={1: (2, "draft")}, final=False)
    ratings_save(annotator=annotator, conversation_id=conversation.id, scores={1: (3, "draft"), 2: (None, "hm")},
                 final=False)
    payload = conversation_payload(conversation, viewer=annotator, assignment=assignment)
    rated = {t["index"]: t["rating"] for t in payload["turns"] if t["is_rateable"]}
    assert rated == {1: {"score": 3, "comment": "draft"}, 2: {"score": None, "comment": "hm"},
                     3: {"score": None, "comment": ""}}
    assert not Rating.objects.filter(is_final=True).exists()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ACTIVE
    assert payload["can_rate"] and not payload["submitted"]


def test_final_save_needs_every_rateable_turn(reserved, annotator):
    _, conversation = reserved
    with pytest.raises(ApplicationError) as error:
        ratings_save(annotator=annotator, conversation_id=conversation.id, scores={1: (4, ""), 2: (None, "")},
                     client_request_id="r", final=True)
    assert error.value.code == "incomplete"
    assert error.value.extra == {"missing_turns": [2, 3]}
    assert "no score yet for turn 3 (index 2), turn 4 (index 3)" in error.value.message
    assert not Rating.objects.exists()  # nothing saved by a refused final save


def test_final_save_takes_scores_from_earlier_drafts(reserved, annotator):
    _, conversation = reserved
    ratings_save(annotator=annotator, conversation_id=conversation.id, scores=FULL, final=False)
    ratings_save(annotator=annotator, conversation_id=conversation.id, scores={}, client_request_id="r",
                 final=True)
    assert Rating.objects.filter(is_final=True).count() == 3


def test_final_save_is_idempotent_on_the_request_id(reserved, annotator):
    assignment, conversation = reserved
    ratings_save(annotator=annotator, conversation_id=conversation.id, scores=FULL, client_request_id="once",
                 final=True)
    again = ratings_save(annotator=annotator, conversation_id=conversation.id, scores={1: (1, "")},
                         client_request_id="once", final=True)
    assert again.replayed
    assert Rating.objects.get(turn__index=1).score == 4
    assert WorkItem.objects.get(pk=assignment.work_item_id).completed_count == 1
    with pytest.raises(Conflict, match="already submitted"):
        ratings_save(annotator=annotator, conversation_id=conversation.id, scores=FULL, client_request_id="other",
                     final=True)
    with pytest.raises(Conflict):
        ratings_save(annotator=annotator, conversation_id=conversation.id, scores={1: (2, "")}, final=False)


@pytest.mark.parametrize("scores, code, text", [
    ({1: (0, "")}, "bad_score", "Turn 2 (index 1): the score must be a whole number from 1 to 5, got 0"),
    ({1: (6, "")}, "bad_score", "got 6"),
    ({1: (True, "")}, "bad_score", "got True"),
    ({1: ("4", "")}, "bad_score", "got '4'"),
    ({0: (3, "")}, "not_rateable", "Turn 1 (index 0) is not rated"),
    ({9: (3, "")}, "unknown_turn", "Turn index 9 does not exist in this conversation (it has 4 turns, indices 0-3)"),
    ({1: (3, "x" * 2001)}, "comment_too_long", "the comment is 2001 characters"),
    ({1: (3, 7)}, "bad_comment", "Turn 2 (index 1): the comment must be text, got 7"),
])
def test_bad_scores_are_refused_with_a_clear_message(reserved, annotator, scores, code, text):
    _, conversation = reserved
    with pytest.raises(ApplicationError) as error:
        ratings_save(annotator=annotator, conversation_id=conversation.id, scores=scores, final=False)
    assert error.value.code == code
    assert text in error.value.message
    assert not Rating.objects.exists()


def test_final_save_needs_a_request_id(reserved, annotator):
    _, conversation = reserved
    with pytest.raises(ApplicationError, match="client_request_id is required"):
        ratings_save(annotator=annotator, conversation_id=conversation.id, scores=FULL, final=True)


def test_only_the_assigned_annotator_can_save(reserved):
    _, conversation = reserved
    with pytest.raises(NotFound):
        ratings_save(annotator=UserFactory(), conversation_id=conversation.id, scores=FULL, final=False)


def test_work_finished_after_the_lease_expired_still_counts(reserved, annotator):
    assignment, conversation = reserved
    Assignment.objects.filter(pk=assignment.pk).update(lease_expires_at=timezone.now() - timedelta(minutes=1))
    from annotate.assignments import assignments_expire

    assignments_expire()
    ratings_save(annotator=annotator, conversation_id=conversation.id, scores=FULL, client_request_id="late",
                 final=True)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.COMPLETED
    assert WorkItem.objects.get(pk=assignment.work_item_id).completed_count == 1
