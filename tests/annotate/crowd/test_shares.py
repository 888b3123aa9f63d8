"""A participant's share: each person sees their own share and progress; a share is done when its items
are completed (skips count only where the batch says so, up to its cap); once it is done the code and the link
back to the crowd platform come at once."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotate.assignments import assignment_skip
from annotate.crowd import services as crowd
from annotate.models import Assignment, Batch, User
from tests.annotate.helpers import finish
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]

CODE = "SHARE-DONE-7"


@pytest.fixture
def study():
    """11 tasks x 2 models, overlap 2, a share of 2 items per invited participant."""
    batch = make_batch(models=[ModelConfigFactory(), ModelConfigFactory()], tasks=11, overlap=2)
    crowd.batch_set_completion_code(batch=batch, code=CODE)
    Batch.objects.filter(pk=batch.pk).update(items_per_participant=2)
    batch.refresh_from_db()
    return batch


def join(client, batch, pid="PID-share-1"):
    url = reverse("crowd-join", args=[crowd.invite_token_create(batch=batch)])
    assert client.post(f"{url}?PROLIFIC_PID={pid}&STUDY_ID=s1&SESSION_ID=x1").status_code == 302
    return User.objects.get(external_id=pid)


def take(client) -> Assignment:
    """Press "Start next item" as the page does; the item the participant was given."""
    response = client.post(reverse("next-item"))
    assert response.status_code == 302 and "/annotate/" in response["Location"], response["Location"]
    return Assignment.objects.filter(annotator_id=client.session["_auth_user_id"]).order_by("-created_at").first()


def test_a_participant_sees_their_share_not_the_batch(client, study):
    join(client, study)
    home = client.get(reverse("home")).content.decode()
    assert "Remaining: <strong>2</strong>" in home and "Your share: 0 of 2 items done." in home
    page = client.get(client.post(reverse("next-item"))["Location"]).content.decode()
    assert "Item 1 of 2 in your share" in page


def test_a_named_annotator_has_no_participant_share(client, study):
    annotator = UserFactory()
    study.annotators.set([annotator])
    Batch.objects.filter(pk=study.pk).update(annotators_named=True)
    client.force_login(annotator)
    home = client.get(reverse("home")).content.decode()
    assert "Remaining: <strong>11</strong>" in home and "Your share" not in home
    for number in (1, 2, 3):
        response = client.post(reverse("next-item"))
        page = client.get(response["Location"]).content.decode()
        assert f"Item {number} in this batch" in page and "in your share" not in page
        finish(Assignment.objects.filter(annotator=annotator).latest("created_at"))


def test_skipping_every_item_earns_no_completion_code(client, study):
    join(client, study)
    while True:
        response = client.post(reverse("next-item"))
        if "/annotate/" not in response["Location"]:
            break
        assignment_skip(assignment=Assignment.objects.filter(status="active").get(), reason="image does not load")
    assert response["Location"] == reverse("crowd-done")
    page = client.get(reverse("crowd-done")).content.decode()
    assert CODE not in page and "No more items for you" in page and "completed 0 of the 2 items" in page


@pytest.mark.parametrize("counts, cap, skips, completed, done", [
    (False, 1, 1, 1, False),  # skips do not count by default: a skip and a completed item are not a share of 2
    (True, 1, 1, 1, True),  # the batch counts skips: a skip and a completed item make the share
    (True, 1, 2, 0, False),  # ... at most `max_counted_skips` of them: two skips count as one
    (True, 2, 2, 0, True),
])
def test_skips_count_only_where_the_batch_says_and_up_to_its_cap(client, study, counts, cap, skips, completed,
                                                                   done):
    Batch.objects.filter(pk=study.pk).update(skips_count_toward_share=counts, max_counted_skips=cap)
    participant = join(client, study)
    for _ in range(skips):
        assignment_skip(assignment=take(client), reason="image does not load")
    for _ in range(completed):
        finish(take(client))
    page = client.get(reverse("crowd-done")).content.decode()
    assert (CODE in page) is done
    if not done:
        assert client.post(reverse("next-item"))["Location"].startswith("/annotate/")  # more to do, and served
    else:
        assert client.post(reverse("next-item"))["Location"] == reverse("crowd-done")
    assert Assignment.objects.filter(annotator=participant, status="completed").count() == completed


def test_the_code_and_return_link_come_at_once_when_the_share_is_done(client, api_client, study):
    participant = join(client, study)
    first = take(client)
    finish(first)
    second = take(client)
    page = client.get(reverse("session-page", args=[second.session.id])).content.decode()
    assert "Item 2 of 2 in your share" in page and "Finish: your completion code" in page
    finish(second)
    response = client.post(reverse("next-item"))  # the done panel's button
    assert response["Location"] == reverse("crowd-done")
    page = client.get(response["Location"]).content.decode()
    assert CODE in page and "app.prolific.com/submissions/complete?cc=" + CODE in page
    assert client.get(reverse("home"))["Location"] == reverse("crowd-done")  # home leads there too
    api_client.force_authenticate(participant)
    assert api_client.post(reverse("api-next"), {}, format="json").json() == {"state": "done", "url": "/done/"}


def test_the_invite_links_page_counts_finished_shares_by_the_same_rule(client, study):
    from annotate.crowd.selectors import invite_links_usage

    Batch.objects.filter(pk=study.pk).update(skips_count_toward_share=True, max_counted_skips=1)
    study.refresh_from_db()
    link, token = crowd.invite_link_create(batch=study, label="pilot")
    client.post(reverse("crowd-join", args=[token]))
    assignment_skip(assignment=take(client), reason="image does not load")
    finish(take(client))
    (row,) = invite_links_usage(batch=study)
    assert (row.joined, row.items_done, row.finished_share) == (1, 1, 1)  # a counted skip and a completed item
