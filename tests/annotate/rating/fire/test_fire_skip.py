"""Skipping a FIRE (or preference) conversation with a reason: the API, the page's form without JavaScript, and
the queue afterwards (the conversation goes to other annotators and never back to the one who skipped it).
Every API: happy path, 403 for a reader, 404 for an outsider, bad input 400 with a clear message."""

import pytest
from django.urls import reverse

from annotate.assignments import assignments_expire
from annotate.imports.batches import import_fire
from annotate.models import Assignment, Batch, Rating, WorkItem
from annotate.queue.services import assignment_next
from annotate.rating.fire.services import ratings_save
from annotate.rating.preference.services import preference_save
from annotate.rating.services import conversation_skip
from tests.annotate.rating.fire.fire_data import write_sample
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

REASON = "The image does not load"


@pytest.fixture
def conversation(fire_batch, annotator):
    return assignment_next(annotator=annotator).work_item.conversation


@pytest.fixture
def single_rater_batch(tmp_path):
    """The two-conversation sample with one rater per conversation: a skipped one is free for the next person."""
    path, images = write_sample(tmp_path)
    report = import_fire(path, name="fire-k1", images=images, overlap=1)
    assert report.status == "imported", report.render()
    return Batch.objects.get(name="fire-k1")


def skip_url(conversation) -> str:
    return reverse("api-conversation-skip", args=[conversation.id])


def assignment_of(annotator, conversation) -> Assignment:
    return Assignment.objects.get(annotator=annotator, work_item__conversation=conversation)


def test_skip_through_the_api(api_client, annotator, conversation):
    api_client.force_authenticate(annotator)
    response = api_client.post(skip_url(conversation), {"reason": f"  {REASON} "}, format="json")
    assert response.status_code == 204
    assignment = assignment_of(annotator, conversation)
    assert (assignment.status, assignment.skip_reason) == (Assignment.Status.SKIPPED, REASON)
    assert assignment.finished_at is not None
    assert WorkItem.objects.get(conversation=conversation).active_count == 0
    # Repeating the skip changes nothing; the conversation now reads as skipped and can no longer be rated.
    assert api_client.post(skip_url(conversation), {"reason": "again"}, format="json").status_code == 204
    assert assignment_of(annotator, conversation).skip_reason == REASON
    detail = api_client.get(reverse("api-conversation", args=[conversation.id])).json()
    assert (detail["skipped"], detail["can_rate"], detail["submitted"]) == (True, False, False)
    save = api_client.post(reverse("api-conversation-ratings", args=[conversation.id]),
                           {"ratings": [{"turn": 1, "score": 3}]}, format="json")
    assert save.status_code == 409 and "You skipped this conversation" in save.json()["detail"]


@pytest.mark.parametrize("body, status, fragment", [
    ({"reason": ""}, 400, "Say why you skip this conversation"),
    ({"reason": "   "}, 400, "Say why you skip this conversation"),
    ({}, 400, "This field is required"),
    ({"reason": "x" * 301}, 400, "no more than 300 characters"),
    ({"reason": ["a list"]}, 400, "Not a valid string"),
])
def test_bad_input_is_a_400_with_a_clear_message(api_client, annotator, conversation, body, status, fragment):
    api_client.force_authenticate(annotator)
    response = api_client.post(skip_url(conversation), body, format="json")
    assert response.status_code == status
    assert fragment in str(response.json())
    assert assignment_of(annotator, conversation).status == Assignment.Status.ACTIVE


def test_outsider_gets_404_and_a_member_researcher_403(api_client, fire_batch, conversation, researcher):
    outsider = UserFactory(username="oscar-outside")
    api_client.force_authenticate(outsider)
    assert api_client.post(skip_url(conversation), {"reason": REASON}, format="json").status_code == 404
    missing = api_client.post(reverse("api-conversation-skip", args=[conversation.id + 999]), {"reason": REASON},
                              format="json")
    assert missing.status_code == 404 and "does not exist or is not assigned to you" in missing.json()["detail"]
    fire_batch.members.add(researcher)
    api_client.force_authenticate(researcher)
    response = api_client.post(skip_url(conversation), {"reason": REASON}, format="json")
    assert response.status_code == 403 and "Only the annotator" in response.json()["detail"]
    api_client.force_authenticate(None)
    assert api_client.post(skip_url(conversation), {"reason": REASON}, format="json").status_code in (401, 403)
    assert Assignment.objects.get(work_item__conversation=conversation).status == Assignment.Status.ACTIVE


def test_a_submitted_conversation_cannot_be_skipped(api_client, annotator, conversation):
    ratings_save(annotator=annotator, conversation_id=conversation.id, scores={1: (4, ""), 2: (3, ""), 3: (5, "")},
                 client_request_id="done", final=True)
    api_client.force_authenticate(annotator)
    response = api_client.post(skip_url(conversation), {"reason": REASON}, format="json")
    assert response.status_code == 409 and "already submitted" in response.json()["detail"]
    assert assignment_of(annotator, conversation).status == Assignment.Status.COMPLETED
    assert WorkItem.objects.get(conversation=conversation).completed_count == 1


def test_an_expired_lease_is_recorded_as_skipped_without_counting_twice(annotator, conversation):
    Assignment.objects.filter(annotator=annotator).update(lease_expires_at="2000-01-01T00:00:00Z")
    assert assignments_expire() == 1
    conversation_skip(annotator=annotator, conversation_id=conversation.id, reason=REASON)
    assignment = assignment_of(annotator, conversation)
    assert (assignment.status, assignment.skip_reason) == (Assignment.Status.SKIPPED, REASON)
    item = WorkItem.objects.get(conversation=conversation)
    assert (item.active_count, item.completed_count) == (0, 0)


def test_skipped_conversations_go_to_others_and_never_back(single_rater_batch, annotator):
    first = assignment_next(annotator=annotator).work_item.conversation
    conversation_skip(annotator=annotator, conversation_id=first.id, reason=REASON)

    # The one who skipped gets the other conversation, then nothing: the skipped one never comes back.
    second = assignment_next(annotator=annotator).work_item.conversation
    assert second.id != first.id
    ratings_save(annotator=annotator, conversation_id=second.id,
                 scores={t.index: (4, "") for t in second.turns.all() if t.is_rateable},
                 client_request_id="second", final=True)
    assert assignment_next(annotator=annotator) is None

    # Another annotator is served the skipped conversation (its slot was freed), and after rating it the batch
    # is done: overlap 1 reached on both conversations.
    other = UserFactory(username="bob")
    taken = assignment_next(annotator=other)
    assert taken is not None and taken.work_item.conversation_id == first.id
    ratings_save(annotator=other, conversation_id=first.id,
                 scores={t.index: (3, "") for t in first.turns.all() if t.is_rateable},
                 client_request_id="first", final=True)
    assert list(WorkItem.objects.order_by("id").values_list("completed_count", "active_count")) == [(1, 0), (1, 0)]
    assert assignment_next(annotator=annotator) is None
    assert not Rating.objects.filter(annotator=annotator, turn__conversation=first).exists()


def test_page_shows_an_accessible_skip_form(client, annotator, conversation):
    client.force_login(annotator)
    html = client.get(reverse("fire-rate", args=[conversation.id])).content.decode()
    assert f'action="{reverse("fire-skip", args=[conversation.id])}"' in html
    assert f'data-skip-url="{skip_url(conversation)}"' in html
    assert '<label for="skip-reason">' in html and 'id="skip-reason" name="reason"' in html
    assert 'aria-required="true"' in html and 'id="skip-error" class="error" role="alert" hidden' in html


def test_page_skip_without_javascript(client, annotator, conversation):
    client.force_login(annotator)
    url = reverse("fire-skip", args=[conversation.id])
    empty = client.post(url, {"reason": " "})
    assert empty.status_code == 400
    html = empty.content.decode()
    assert "Say why you skip this conversation" in html and 'aria-invalid="true"' in html
    assert '<details class="skip" id="skip-panel" open>' in html
    assert assignment_of(annotator, conversation).status == Assignment.Status.ACTIVE

    response = client.post(url, {"reason": REASON})
    following = Assignment.objects.get(annotator=annotator, status=Assignment.Status.ACTIVE)
    assert following.work_item.conversation_id != conversation.id
    assert response.status_code == 302
    assert response["Location"] == reverse("fire-rate", args=[following.work_item.conversation_id])
    assert assignment_of(annotator, conversation).status == Assignment.Status.SKIPPED
    page = client.get(reverse("fire-rate", args=[conversation.id])).content.decode()
    assert "You skipped this conversation" in page and 'id="skip-form"' not in page and 'id="next-button"' in page


def test_page_skip_of_the_last_item_goes_home(client, single_rater_batch, annotator):
    first = assignment_next(annotator=annotator).work_item.conversation
    conversation_skip(annotator=annotator, conversation_id=first.id, reason=REASON)
    second = assignment_next(annotator=annotator).work_item.conversation
    client.force_login(annotator)
    response = client.post(reverse("fire-skip", args=[second.id]), {"reason": REASON}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("home")
    assert "You have finished your share" in response.content.decode()


def test_page_skip_access(client, fire_batch, conversation, researcher):
    url = reverse("fire-skip", args=[conversation.id])
    client.force_login(UserFactory(username="oscar-outside"))
    assert client.post(url, {"reason": REASON}).status_code == 404
    fire_batch.members.add(researcher)
    client.force_login(researcher)
    assert client.post(url, {"reason": REASON}).status_code == 403
    assert client.get(url).status_code == 405
    assert Assignment.objects.get(work_item__conversation=conversation).status == Assignment.Status.ACTIVE


def test_preference_conversations_can_be_skipped(api_client, tmp_path, annotator):
    from annotate.imports.batches import batch_import
    from tests.annotate.rating.fire.fire_data import write_jsonl

    records = [{"id": "p1", "question": "Which is better?", "responses": ["A.", "B."]},
               {"id": "p2", "question": "And here?", "responses": ["C.", "D."]}]
    report = batch_import(path=write_jsonl(tmp_path / "pref.jsonl", records), name="pref", kind="preference")
    assert report.status == "imported", report.render()
    conversation = assignment_next(annotator=annotator).work_item.conversation
    preference_save(annotator=annotator, conversation_id=conversation.id, ratings={0: {"helpfulness": 2}},
                    ranking="", final=False)  # a draft stays a draft
    api_client.force_authenticate(annotator)
    assert api_client.post(skip_url(conversation), {"reason": "Off topic"}, format="json").status_code == 204
    assert assignment_of(annotator, conversation).status == Assignment.Status.SKIPPED
    assert not Rating.objects.filter(is_final=True).exists()
    assert assignment_next(annotator=annotator).work_item.conversation.external_id == "p2"


def test_openapi_schema_has_the_skip_route(client, researcher):
    client.force_login(researcher)
    schema = client.get(reverse("api-schema"), HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    skip = schema["paths"]["/api/conversations/{conversation_id}/skip/"]["post"]
    assert set(skip["responses"]) == {"204", "400", "403", "404", "409", "415"}
    # Request and response components are split: the request side is named ...Request.
    assert skip["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/ConversationSkipInputRequest")
    assert schema["components"]["schemas"]["ConversationSkipInputRequest"]["required"] == ["reason"]


def test_page_skip_after_submitting_shows_why_not(client, annotator, conversation):
    ratings_save(annotator=annotator, conversation_id=conversation.id, scores={1: (4, ""), 2: (3, ""), 3: (5, "")},
                 client_request_id="done", final=True)
    client.force_login(annotator)
    response = client.post(reverse("fire-skip", args=[conversation.id]), {"reason": REASON})
    assert response.status_code == 409
    html = response.content.decode()
    assert 'id="server-error">You already submitted your ratings for this conversation' in html
    assert 'id="skip-form"' not in html
