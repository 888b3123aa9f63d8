"""Starting and resuming bench and FIRE runs count against the same per-person limit as other long jobs
(``JOB_RATE_LIMIT``): every start and resume queues a message per lane on the shared bench queue. Over the API the
next one is 429 with Retry-After; on the pages a message says the limit and nothing is queued. Reading and cancelling
are never limited."""

from __future__ import annotations

import uuid

import pytest
from django.core.cache import cache

from annotate.models import BenchRun, User
from tests.annotate.bench.test_bench_engine import bench_batch  # noqa: F401  (the fixture)
from tests.annotate.bench.test_fire_runs import fire_run_batch  # noqa: F401  (the fixture)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

START = {"batch": "bench-known", "receivers": "r-one", "providers": "p-one", "lanes": 1}


@pytest.fixture
def limited(settings):
    settings.JOB_RATE_LIMIT = "2/min"
    settings.CACHES = {"default": {**settings.CACHES["default"], "KEY_PREFIX": f"throttle-test-{uuid.uuid4()}"}}
    cache.close()


@pytest.fixture
def researcher(bench_batch, fire_run_batch):  # noqa: F811
    user = UserFactory(username="rita", role=User.Role.RESEARCHER)
    bench_batch.members.add(user)
    fire_run_batch.members.add(user)
    return user


def test_starting_runs_over_the_api_is_limited_per_person(limited, api_client, researcher, bench_batch,  # noqa: F811
                                                           sent_tasks):
    api_client.force_authenticate(researcher)
    fire = {"protocol": "fire_fixed", "batch": "fire-runs", "receivers": "s-a", "providers": "t-1", "lanes": 1}
    codes = [api_client.post("/api/bench-runs/", body, format="json").status_code for body in (START, fire, START)]
    assert codes == [201, 201, 429]
    refused = api_client.post("/api/bench-runs/", fire, format="json")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "at most 2/min per person" in refused.json()["detail"]
    assert BenchRun.objects.count() == 2
    assert api_client.get("/api/bench-runs/").status_code == 200  # reading is never limited
    other = UserFactory(username="ruth", role=User.Role.RESEARCHER)
    bench_batch.members.add(other)
    api_client.force_authenticate(other)
    assert api_client.post("/api/bench-runs/", START, format="json").status_code == 201


def test_resuming_over_the_api_is_limited_and_cancelling_is_not(limited, api_client, researcher, sent_tasks):
    api_client.force_authenticate(researcher)
    run_id = api_client.post("/api/bench-runs/", START, format="json").json()["id"]
    for _ in range(3):
        assert api_client.post(f"/api/bench-runs/{run_id}/cancel/").status_code == 200
    assert api_client.post(f"/api/bench-runs/{run_id}/resume/").status_code == 200
    refused = api_client.post(f"/api/bench-runs/{run_id}/resume/")
    assert refused.status_code == 429 and "at most 2/min per person" in refused.json()["detail"]


def test_the_pages_say_the_limit_and_start_nothing(limited, client, researcher, bench_batch, sent_tasks,  # noqa: F811
                                                    django_capture_on_commit_callbacks):
    client.force_login(researcher)
    form = {"batch": bench_batch.pk, "receivers": ["r-one"], "providers": ["p-one"], "feedback": ["detail"],
            "rounds": 2, "lanes": 1}
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post("/research/bench/", form).status_code == 302
        run = BenchRun.objects.get()
        BenchRun.objects.filter(pk=run.pk).update(status=BenchRun.Status.CANCELLED)
        assert client.post(f"/research/bench/{run.pk}/resume/").status_code == 302
    assert len(sent_tasks) == 2  # a lane message for the start, one for the resume
    with django_capture_on_commit_callbacks(execute=True):
        page = client.post("/research/bench/", form)
        assert page.status_code == 200 and "Too many jobs started: at most 2/min per person" in page.content.decode()
        BenchRun.objects.filter(pk=run.pk).update(status=BenchRun.Status.CANCELLED)
        page = client.post(f"/research/bench/{run.pk}/resume/", follow=True)
    assert "Too many jobs started" in page.content.decode()
    assert BenchRun.objects.count() == 1 and len(sent_tasks) == 2
    run.refresh_from_db()
    assert run.status == BenchRun.Status.CANCELLED  # not resumed
