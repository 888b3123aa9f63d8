"""Who sees and rates what: the assigned annotator rates; a member researcher reads (403 on writes); anyone
else gets 404. Every API: happy path, 403, 404, bad input 400 with a clear message."""

import pytest
from django.urls import reverse

from annotate.models import Rating
from annotate.queue.services import assignment_next
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(fire_batch, annotator):
    return assignment_next(annotator=annotator).work_item.conversation


@pytest.fixture
def member(fire_batch, researcher):
    fire_batch.members.add(researcher)
    return researcher


def ratings_url(conversation):
    return reverse("api-conversation-ratings", args=[conversation.id])


FINAL = {"ratings": [{"turn": 1, "score": 4, "comment": "good"}, {"turn": 2, "score": 3}, {"turn": 3, "score": 5}],
         "final": True, "client_request_id": "abc"}


def test_annotator_reads_the_conversation_with_ground_truth(api_client, annotator, conversation,
                                                            django_assert_max_num_queries):
    api_client.force_authenticate(annotator)
    with django_assert_max_num_queries(8):
        response = api_client.get(reverse("api-conversation", args=[conversation.id]))
    assert response.status_code == 200
    body = response.json()
    assert body["ground_truth"] == "green" and body["can_rate"] is True
    assert [t["is_rateable"] for t in body["turns"]] == [False, True, True, True]
    assert body["turns"][0]["parts"] == [{"label": "Thought", "text": "attempt 1."}, {"label": "Answer", "text": "x"}]
    assert body["turns"][1]["parts"][0] == {"label": "Score", "text": "3"}
    assert {c["name"] for c in body["criteria"]["response"]} == {"Improvement", "Correctness", "Relevance",
                                                                 "Completeness"}
    assert {c["name"] for c in body["criteria"]["feedback"]} == {"Correctness", "Relevance", "Clarity",
                                                                 "Constructiveness"}


def test_annotator_saves_ratings_through_the_api(api_client, annotator, conversation):
    api_client.force_authenticate(annotator)
    draft = api_client.post(ratings_url(conversation), {"ratings": [{"turn": 1, "score": 2}]}, format="json")
    assert draft.status_code == 200 and draft.json()["final"] is False
    response = api_client.post(ratings_url(conversation), FINAL, format="json")
    assert response.status_code == 200
    assert response.json() == {"conversation_id": conversation.id, "saved": 3, "final": True, "replayed": False}
    assert api_client.post(ratings_url(conversation), FINAL, format="json").json()["replayed"] is True
    assert api_client.post(ratings_url(conversation), dict(FINAL, client_request_id="new"),
                           format="json").status_code == 409


@pytest.mark.parametrize("body, fragment", [
    ({"ratings": [{"turn": 1, "score": 7}]}, "less than or equal to 5"),
    ({"ratings": [{"turn": 1, "score": 2}, {"turn": 1, "score": 3}]}, "Each turn may appear only once"),
    ({"ratings": [{"turn": 0, "score": 2}]}, "Turn 1 (index 0) is not rated"),
    ({"ratings": [{"turn": 1, "score": 4}], "final": True, "client_request_id": "x"}, "no score yet for turn 3 (index 2), turn 4 (index 3)"),
    ({"ratings": "4,4,4"}, "list"),
])
def test_bad_input_is_a_400_with_a_clear_message(api_client, annotator, conversation, body, fragment):
    api_client.force_authenticate(annotator)
    response = api_client.post(ratings_url(conversation), body, format="json")
    assert response.status_code == 400
    assert fragment in str(response.json())
    assert not Rating.objects.exists()


def test_member_researcher_reads_but_may_not_rate(api_client, member, conversation):
    api_client.force_authenticate(member)
    response = api_client.get(reverse("api-conversation", args=[conversation.id]))
    assert response.status_code == 200 and response.json()["can_rate"] is False
    assert api_client.post(ratings_url(conversation), FINAL, format="json").status_code == 403
    assert api_client.post(reverse("api-conversation-heartbeat", args=[conversation.id])).status_code == 403


@pytest.mark.parametrize("who", ["outsider", "researcher"])  # researcher: not a member of this batch
def test_outsiders_get_404(api_client, conversation, who, request):
    api_client.force_authenticate(request.getfixturevalue(who))
    assert api_client.get(reverse("api-conversation", args=[conversation.id])).status_code == 404
    assert api_client.post(ratings_url(conversation), FINAL, format="json").status_code == 404
    assert api_client.get(reverse("api-conversation", args=[999999])).status_code == 404


def test_anonymous_is_refused(api_client, conversation):
    assert api_client.get(reverse("api-conversation", args=[conversation.id])).status_code in (401, 403)


def test_heartbeat_renews_the_lease(api_client, annotator, conversation):
    api_client.force_authenticate(annotator)
    assert api_client.post(reverse("api-conversation-heartbeat", args=[conversation.id])).status_code == 204


def test_rating_page_for_each_persona(client, annotator, member, outsider, conversation):
    url = reverse("fire-rate", args=[conversation.id])
    client.force_login(annotator)
    page = client.get(url).content.decode()
    assert 'name="score-1"' in page and "Save scores and next" in page
    assert "Ground truth: <strong>green</strong>" in page
    assert "Improvement" in page and "Constructiveness" in page
    assert client.get(reverse("conversation-image", args=[conversation.id])).status_code == 200
    client.force_login(member)
    page = client.get(url).content.decode()
    assert "Read-only" in page and "Save scores and next" not in page
    assert client.post(url, {"client_request_id": "r", "score-1": "4"}).status_code == 403
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    assert client.get(reverse("conversation-image", args=[conversation.id])).status_code == 404


def test_the_page_form_works_without_javascript(client, annotator, conversation):
    client.force_login(annotator)
    url = reverse("fire-rate", args=[conversation.id])
    incomplete = client.post(url, {"client_request_id": "nojs", "score-1": "4"})
    assert incomplete.status_code == 400 and "no score yet for turn 3 (index 2), turn 4 (index 3)" in incomplete.content.decode()
    done = client.post(url, {"client_request_id": "nojs", "score-1": "4", "score-2": "3", "score-3": "5",
                             "comment-2": "better"})
    assert done.status_code == 302
    assert Rating.objects.get(turn__index=2).comment == "better"
    assert "Your ratings of this conversation are saved" in client.get(url).content.decode()


def test_another_annotator_never_sees_my_ratings(api_client, annotator, conversation, fire_batch):
    api_client.force_authenticate(annotator)
    api_client.post(ratings_url(conversation), FINAL, format="json")
    other = UserFactory()
    mine = assignment_next(annotator=other)
    assert mine.work_item.conversation_id == conversation.id
    api_client.force_authenticate(other)
    body = api_client.get(reverse("api-conversation", args=[conversation.id])).json()
    assert all(t["rating"] == {"score": None, "comment": ""} for t in body["turns"] if t["is_rateable"])
