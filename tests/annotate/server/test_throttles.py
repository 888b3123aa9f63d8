"""Per-user limits on starting long jobs: the API answers 429 with Retry-After and the limit; the research page
says so; another user is not affected. Counted in the shared Redis cache."""

import uuid

import pytest
from django.core.cache import cache

from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def limited(settings):
    settings.JOB_RATE_LIMIT = "2/min"
    # Keys of this test alone (the cache is the shared Redis): users are new, ids may repeat across test runs.
    settings.CACHES = {"default": {**settings.CACHES["default"], "KEY_PREFIX": f"throttle-test-{uuid.uuid4()}"}}
    cache.close()


def test_the_third_recount_in_a_minute_is_429_for_that_user_only(limited, researcher, api_client, sent_tasks):
    other = UserFactory(username="ruth", role=researcher.role)
    batch = make_batch(models=[ModelConfigFactory()], members=[researcher, other])
    api_client.force_authenticate(researcher)
    codes = [api_client.post(f"/api/batches/{batch.id}/recompute/").status_code for _ in range(3)]
    assert codes == [202, 202, 429]
    refused = api_client.post(f"/api/batches/{batch.id}/recompute/")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "at most 2/min per person" in refused.json()["detail"]
    api_client.force_authenticate(other)
    assert api_client.post(f"/api/batches/{batch.id}/recompute/").status_code == 202


def test_exports_and_model_checks_are_limited_too(limited, researcher, admin_user, api_client, sent_tasks):
    batch = make_batch(models=[ModelConfigFactory(name="checked")], members=[researcher])
    api_client.force_authenticate(researcher)
    codes = [api_client.post(f"/api/batches/{batch.id}/exports/sessions/", {}, format="json").status_code
             for _ in range(3)]
    assert codes == [202, 202, 429]
    api_client.force_authenticate(admin_user)
    codes = [api_client.post("/api/models/checked/check/", {}, format="json").status_code for _ in range(3)]
    assert codes == [202, 202, 429]


def test_the_research_page_button_says_the_limit(limited, researcher, client, sent_tasks):
    batch = make_batch(models=[ModelConfigFactory()], members=[researcher])
    client.force_login(researcher)
    for _ in range(2):
        client.post(f"/research/batches/{batch.id}/recompute/")
    page = client.post(f"/research/batches/{batch.id}/recompute/", follow=True)
    assert "Too many jobs started: at most 2/min per person" in page.content.decode()
