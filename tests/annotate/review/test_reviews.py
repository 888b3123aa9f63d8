"""Reviewer verdict overrides: audit trail, recomputed outcome, recount hook, permissions and bad input."""


import pytest
from django.urls import reverse

from annotate.errors import ApplicationError, Conflict, NotFound, PermissionDenied
from annotate.models import Round, Session, User, VerdictOverride
from annotate.queue.services import assignment_next
from annotate.review.services import corrected_round_of, round_override_verdict
from annotate.sessions.services import round_record_verdict
from tests.annotate.helpers import run_pending_round, send_feedback
from tests.factories import UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]



@pytest.fixture
def recount(sent_tasks):
    """The session ids sent to the outcome counter (the evaluation app's hook queues its task)."""

    class Recount:
        @property
        def sessions(self):
            return [args[0] for args in sent_tasks.args_of("evaluation.tasks.outcome_record")]

    return Recount()


def start(annotator, model, researcher, **task_fields):
    batch = make_batch(models=[model], members=[researcher], **task_fields)
    session = assignment_next(annotator=annotator, batch=batch).session
    run_pending_round(session)
    return session


@pytest.fixture
def never_corrected(annotator, simulated_model, researcher):
    """A number task the simulated student gets right only when told the answer in round 3."""
    session = start(annotator, simulated_model, researcher)
    for _ in range(3):
        send_feedback(session)
    assert session.status == Session.Status.COMPLETED and session.corrected_round == 3
    return session


@pytest.fixture
def manual_done(annotator, simulated_model, researcher):
    """A manual task the annotator judged correct at round 0."""
    session = start(annotator, simulated_model, researcher, answer_type="manual", ground_truth="a tabby cat")
    round_record_verdict(session_id=session.id, correct=True)
    session.refresh_from_db()
    assert session.corrected_round == 0
    return session


def test_override_is_audited_and_recomputes_the_outcome(never_corrected, researcher, recount,
                                                        django_capture_on_commit_callbacks):
    session = never_corrected
    round1 = session.rounds.get(index=1)
    with django_capture_on_commit_callbacks(execute=True):
        result = round_override_verdict(round_id=round1.id, reviewer=researcher, correct=True,
                                        reason="  The answer 'about 7400' is within the task's tolerance.  ")
    session.refresh_from_db()
    round1.refresh_from_db()
    assert session.corrected_round == 1 and session.status == Session.Status.COMPLETED
    assert round1.final_verdict is True and round1.auto_verdict is False
    assert round1.verdict_source == Round.VerdictSource.REVIEWER
    override = VerdictOverride.objects.get()
    assert (override.round_id, override.reviewer_id, override.old_verdict, override.new_verdict) == (
        round1.id, researcher.id, False, True)
    assert override.reason == "The answer 'about 7400' is within the task's tolerance." and override.created_at
    assert result.old_corrected_round == 3 and not result.truncated
    assert recount.sessions == [session.id]

    # Back again: the first correct round is 3 once more.
    with django_capture_on_commit_callbacks(execute=True):
        round_override_verdict(round_id=round1.id, reviewer=researcher, correct=False, reason="Misread the scale.")
    session.refresh_from_db()
    assert session.corrected_round == 3 and VerdictOverride.objects.count() == 2
    assert len(recount.sessions) == 2


def test_wrong_at_the_last_round_is_never(never_corrected, researcher, recount, django_capture_on_commit_callbacks):
    last = never_corrected.rounds.get(index=3)
    with django_capture_on_commit_callbacks(execute=True):
        result = round_override_verdict(round_id=last.id, reviewer=researcher, correct=False, reason="Wrong unit.")
    never_corrected.refresh_from_db()
    assert never_corrected.corrected_round is None and not result.truncated
    assert never_corrected.status == Session.Status.COMPLETED


def test_session_that_ended_early_counts_as_never_and_says_truncated(manual_done, researcher, recount):
    rnd = manual_done.rounds.get(index=0)
    result = round_override_verdict(round_id=rnd.id, reviewer=researcher, correct=False, reason="Not a tabby.")
    manual_done.refresh_from_db()
    assert manual_done.corrected_round is None and result.truncated
    assert manual_done.status == Session.Status.COMPLETED


def test_admin_may_override_any_batch(manual_done, recount):
    admin = UserFactory(username="ada", role=User.Role.ADMIN)
    rnd = manual_done.rounds.get(index=0)
    round_override_verdict(round_id=rnd.id, reviewer=admin, correct=False, reason="Checked the source.")
    assert VerdictOverride.objects.get().reviewer == admin


@pytest.mark.parametrize("kwargs, error", [
    ({"reason": "  "}, ApplicationError),
    ({"reason": "x" * 2001}, ApplicationError),
    ({"reason": "same", "correct": True}, ApplicationError),  # already correct: nothing to override
])
def test_bad_overrides_are_refused(manual_done, researcher, kwargs, error):
    rnd = manual_done.rounds.get(index=0)
    with pytest.raises(error):
        round_override_verdict(round_id=rnd.id, reviewer=researcher, **{"correct": False, **kwargs})
    assert not VerdictOverride.objects.exists()


def test_sessions_in_progress_cannot_be_overridden(annotator, simulated_model, researcher):
    session = start(annotator, simulated_model, researcher)  # awaiting feedback after a wrong round 0
    with pytest.raises(Conflict):
        round_override_verdict(round_id=session.rounds.get().id, reviewer=researcher, correct=True, reason="r")


def test_who_may_override(manual_done, annotator, outsider):
    rnd = manual_done.rounds.get(index=0)
    non_member = UserFactory(username="nina", role=User.Role.RESEARCHER)
    with pytest.raises(PermissionDenied):
        round_override_verdict(round_id=rnd.id, reviewer=annotator, correct=False, reason="mine")
    with pytest.raises(NotFound):
        round_override_verdict(round_id=rnd.id, reviewer=non_member, correct=False, reason="r")
    assert not VerdictOverride.objects.exists()


@pytest.mark.parametrize("verdicts, expected", [
    ([(0, False), (1, False), (2, True), (3, True)], 2),
    ([(1, True), (0, True)], 0),
    ([(0, False), (1, None)], None),
    ([], None),
])
def test_corrected_round_of(verdicts, expected):
    assert corrected_round_of(verdicts) == expected


# --- API ----------------------------------------------------------------------------------------------------------


def override_url(rnd):
    return reverse("api-round-verdict-override", args=[rnd.id])


def test_api_override_and_audit_trail(api_client, researcher, manual_done, recount,
                                      django_assert_max_num_queries):
    rnd = manual_done.rounds.get(index=0)
    api_client.force_authenticate(researcher)
    response = api_client.post(override_url(rnd), {"correct": False, "reason": "Not a tabby."}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["corrected_round"] is None and body["old_corrected_round"] == 0 and body["truncated"] is True
    assert body["override"]["old_verdict"] is True and body["override"]["new_verdict"] is False
    assert body["override"]["reviewer"] == researcher.pseudonym
    with django_assert_max_num_queries(4):
        listing = api_client.get(reverse("api-round-overrides", args=[rnd.id]))
    assert listing.status_code == 200
    assert [o["reason"] for o in listing.json()] == ["Not a tabby."]
    assert researcher.username not in listing.content.decode()


@pytest.mark.parametrize("payload, field", [
    ({"correct": False}, "reason"),
    ({"correct": False, "reason": ""}, "reason"),
    ({"reason": "why"}, "correct"),
    ({"correct": "maybe", "reason": "why"}, "correct"),
])
def test_api_bad_input_is_400_naming_the_field(api_client, researcher, manual_done, payload, field):
    api_client.force_authenticate(researcher)
    response = api_client.post(override_url(manual_done.rounds.get()), payload, format="json")
    assert response.status_code == 400 and field in response.json()


def test_api_annotators_get_403_non_members_404(api_client, annotator, outsider, manual_done):
    rnd = manual_done.rounds.get()
    payload = {"correct": False, "reason": "I changed my mind"}
    for user in (annotator, outsider):
        api_client.force_authenticate(user)
        assert api_client.post(override_url(rnd), payload, format="json").status_code == 403
        assert api_client.get(reverse("api-round-overrides", args=[rnd.id])).status_code == 403
    api_client.force_authenticate(UserFactory(username="nina", role=User.Role.RESEARCHER))
    assert api_client.post(override_url(rnd), payload, format="json").status_code == 404
    assert api_client.get(reverse("api-round-overrides", args=[rnd.id])).status_code == 404
    api_client.force_authenticate(None)
    assert api_client.post(override_url(rnd), payload, format="json").status_code == 403
    assert not VerdictOverride.objects.exists()


def test_api_missing_round_is_404_and_conflict_is_409(api_client, researcher, annotator, simulated_model):
    api_client.force_authenticate(researcher)
    response = api_client.post(reverse("api-round-verdict-override", args=[999999]),
                               {"correct": True, "reason": "r"}, format="json")
    assert response.status_code == 404
    session = start(annotator, simulated_model, researcher)
    response = api_client.post(override_url(session.rounds.get()), {"correct": True, "reason": "r"}, format="json")
    assert response.status_code == 409
