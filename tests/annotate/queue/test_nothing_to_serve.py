"""When the queue has nothing for an annotator it says why: their share is done, or the items left are held by
others for now (with when to ask again), through the API and on the page; never a bare 204."""

import pytest
from django.urls import reverse

from annotate.assignments import assignment_skip
from annotate.queue.services import WAIT_SECONDS_MAX, WAIT_SECONDS_MIN, assignment_next, nothing_to_serve
from tests.annotate.helpers import finish
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def one_item(no_dispatch):
    return make_batch(models=[ModelConfigFactory()], tasks=1, overlap=1)


def test_an_item_held_by_another_annotator_means_wait(api_client, one_item):
    holder = assignment_next(annotator=UserFactory())
    assert holder is not None
    api_client.force_authenticate(UserFactory())
    response = api_client.post(reverse("api-next"), {}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["state"] == "wait" and WAIT_SECONDS_MIN <= body["retry_after"] <= WAIT_SECONDS_MAX
    assert response["Retry-After"] == str(body["retry_after"])

    finish(holder)  # K=1 met: nothing will come back
    assert api_client.post(reverse("api-next"), {}, format="json").json() == {"state": "done"}
    assert api_client.post(reverse("api-next"), {"batch": one_item.name}, format="json").json() == {"state": "done"}


def test_a_finished_share_means_done_while_others_still_work(one_item):
    models = [ModelConfigFactory(), ModelConfigFactory()]
    batch = make_batch(models=models, tasks=1, overlap=2)
    me, other = UserFactory(), UserFactory()
    mine = assignment_next(annotator=me, batch=batch)
    finish(mine)
    # The same task with the other model is open, but an annotator never sees a task twice: done, not wait.
    assert assignment_next(annotator=other, batch=batch) is not None
    assert assignment_next(annotator=me, batch=batch) is None
    assert nothing_to_serve(annotator=me, batch=batch).state == "done"


def test_an_item_returns_to_the_queue_when_the_state_said_wait(one_item):
    holder = assignment_next(annotator=UserFactory())
    waiting = UserFactory()
    assert nothing_to_serve(annotator=waiting).state == "wait"
    assignment_skip(assignment=holder, reason="image does not load")
    assert assignment_next(annotator=waiting) is not None  # what "wait" promised


def test_the_page_says_which(client, one_item):
    holder = assignment_next(annotator=UserFactory())
    waiting = UserFactory()
    client.force_login(waiting)
    page = client.post(reverse("next-item"), follow=True).content.decode()
    assert "being worked on by others" in page and "finished your share" not in page
    finish(holder)
    page = client.post(reverse("next-item"), follow=True).content.decode()
    assert "You have finished your share" in page and "being worked on by others" not in page


def test_the_home_page_says_which_in_place_of_start_next_item(client, one_item):
    holder = assignment_next(annotator=UserFactory())
    waiting = UserFactory()
    client.force_login(waiting)
    page = client.get(reverse("home")).content.decode()  # before pressing anything
    assert "being worked on by others" in page and "Start next item" not in page and ">Try again<" in page
    finish(holder)
    page = client.get(reverse("home")).content.decode()
    assert "You have finished your share" in page and 'id="next-button"' not in page
