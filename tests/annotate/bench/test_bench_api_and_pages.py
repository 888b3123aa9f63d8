"""Bench runs through the API and the research pages: permissions, a 400 naming what is wrong, progress, cancel,
resume, and the tables once done."""

from __future__ import annotations

import pytest

from annotate.bench import engine
from annotate.models import BenchRun, User
from annotate.server.version import VERSION
from tests.annotate.bench.test_bench_engine import EXPECTED, bench_batch  # noqa: F401  (the fixture)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(bench_batch):  # noqa: F811
    user = UserFactory(username="rita", role=User.Role.RESEARCHER)
    bench_batch.members.add(user)
    return user


def test_start_read_and_run_over_the_api(api_client, researcher, bench_batch, sent_tasks,  # noqa: F811
                                         django_capture_on_commit_callbacks):
    api_client.force_authenticate(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post("/api/bench-runs/", {"batch": "bench-known", "receivers": "r-one,r-two",
                                                        "providers": "p-one,p-two", "lanes": 2}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "queued" and body["receivers"] == ["r-one", "r-two"]
    assert "Do NOT state the correct answer" in body["prompts"]["provider"]["provider_detail"]
    assert [(name, args, options["queue"]) for name, args, options in sent_tasks] == [
        ("annotate.tasks.bench_lane", [body["id"], lane], "bench") for lane in range(2)]  # one message per lane
    # The run's bound: while its lanes are held, dispatching again (a second start, a resume) adds no worker.
    from annotate.bench.services import bench_run_dispatch

    for lane in range(2):
        engine.lane_claim(run_id=body["id"], lane=lane, token=f"live-{lane}")
    assert bench_run_dispatch(body["id"]) == 0 and len(sent_tasks) == 2
    from annotate.models import BenchLane

    BenchLane.objects.filter(run_id=body["id"]).update(lease_token="", leased_until=None)
    for lane in range(2):
        engine.lane_run(run_id=body["id"], lane=lane)
    done = api_client.get(f"/api/bench-runs/{body['id']}/").json()
    assert done["status"] == "done" and done["progress"]["sessions_done"] == done["progress"]["sessions"] == 20
    table = api_client.get(done["table"]).json()
    assert table["rows"][0]["Model"] == "r-one" and table["rows"][0]["p-one: Detail (%)"] == 66.7


def test_bad_requests_name_what_is_wrong(api_client, researcher):
    api_client.force_authenticate(researcher)
    response = api_client.post("/api/bench-runs/", {"batch": "bench-known", "receivers": "ghost",
                                                    "providers": "p-one"}, format="json")
    assert response.status_code == 400 and "No active model named 'ghost'" in response.json()["detail"]
    response = api_client.post("/api/bench-runs/", {"batch": "nope", "receivers": "r-one", "providers": "p-one"},
                               format="json")
    assert response.status_code == 404
    assert not BenchRun.objects.exists()


def test_annotators_and_non_members_see_nothing(api_client, bench_batch, sent_tasks):  # noqa: F811
    api_client.force_authenticate(UserFactory(username="anna", role=User.Role.ANNOTATOR))
    assert api_client.get("/api/bench-runs/").status_code == 403
    outsider = UserFactory(username="otto", role=User.Role.RESEARCHER)
    api_client.force_authenticate(outsider)
    assert api_client.get("/api/bench-runs/").json() == []
    response = api_client.post("/api/bench-runs/", {"batch": "bench-known", "receivers": "r-one",
                                                    "providers": "p-one"}, format="json")
    assert response.status_code == 404


def test_cancel_and_resume(api_client, researcher, sent_tasks):
    api_client.force_authenticate(researcher)
    run_id = api_client.post("/api/bench-runs/", {"batch": "bench-known", "receivers": "r-one",
                                                  "providers": "p-one", "lanes": 1}, format="json").json()["id"]
    assert api_client.post(f"/api/bench-runs/{run_id}/cancel/").json()["status"] == "cancelled"
    assert engine.lane_run(run_id=run_id, lane=0) is False
    resumed = api_client.post(f"/api/bench-runs/{run_id}/resume/").json()
    assert resumed["status"] == "running"
    assert engine.lane_run(run_id=run_id, lane=0) is True
    assert api_client.post(f"/api/bench-runs/{run_id}/resume/").status_code == 409  # done: start a new run


def test_pages_start_a_run_and_show_progress_then_tables(client, researcher, sent_tasks):
    client.force_login(researcher)
    page = client.get("/research/bench/")
    assert page.status_code == 200 and "Start a run" in page.content.decode()
    response = client.post("/research/bench/", {"batch": researcher.member_batches.get().pk,
                                                 "receivers": ["r-one", "r-two"], "providers": ["p-one", "p-two"],
                                                 "feedback": ["detail", "simple"], "rounds": 3, "lanes": 1})
    assert response.status_code == 302
    run = BenchRun.objects.get()
    html = client.get(response["Location"]).content.decode()
    assert 'id="run-status"' in html and "Queued" in html and 'id="run-cancel"' in html
    engine.lane_run(run_id=run.pk, lane=0)
    html = client.get(f"/research/bench/{run.pk}/").content.decode()
    assert 'id="bench-table"' in html and "66.7" in html and "Done" in html
    for fmt in ("csv", "md", "tex", "json"):
        assert client.get(f"/research/batches/{run.batch_id}/export/bench.{fmt}").status_code == 200
    download = client.get(f"/research/bench/{run.pk}/prompts.json")
    assert download["X-Feedback-Lab-Version"] == VERSION  # the run's files name the version that made them
    prompts = download.json()
    assert "Do NOT state the correct answer" in prompts["prompts"]["provider"]["provider_detail"]
    assert prompts["receivers"] == ["r-one", "r-two"] and prompts["max_rounds"] == 3


def test_the_form_sets_leak_regeneration_and_the_provider_prompt(client, researcher, bench_batch,  # noqa: F811
                                                                  sent_tasks):
    client.force_login(researcher)
    form = {"batch": bench_batch.pk, "receivers": ["r-one"], "providers": ["p-one"], "feedback": ["detail"],
            "rounds": 2, "lanes": 1}
    page = client.get("/research/bench/").content.decode()
    assert 'name="regenerate_leaks"' in page and 'name="provider_prompt"' in page
    bad = client.post("/research/bench/", {**form, "provider_prompt": "Help with {question}."})
    assert bad.status_code == 200 and "The provider prompt must contain {attempts}." in bad.content.decode()
    assert not BenchRun.objects.exists()
    # regenerate_leaks left unticked: off; the prompt replaces the provider's template.
    prompt = "Problem: {question}\nAttempts: {attempts}\nHint without the answer."
    assert client.post("/research/bench/", {**form, "provider_prompt": prompt}).status_code == 302
    run = BenchRun.objects.get()
    assert run.regenerate_leaks is False and run.prompts["provider"]["provider_detail"] == prompt
    assert client.post("/research/bench/", {**form, "regenerate_leaks": "on"}).status_code == 302
    assert BenchRun.objects.latest("pk").regenerate_leaks is True


def test_a_run_stores_its_models_settings_and_the_receivers_full_templates(client, researcher, bench_batch,  # noqa: F811
                                                                           sent_tasks):
    from annotate.bench import services
    from annotate.models import ModelConfig
    from annotate.sessions.prompts import DEFAULT_TEMPLATES

    bench_batch.prompt_templates = {"receiver_retry": "Feedback: {feedback}\nTry again."}
    bench_batch.save(update_fields=["prompt_templates"])
    ModelConfig.objects.filter(name="r-one").update(generation={"temperature": 0.0, "max_new_tokens": 64})
    run = services.bench_run_create(batch=bench_batch, receivers="r-one", providers="p-one", dispatch=False)
    # Edited after the start: the run keeps what it started with.
    ModelConfig.objects.filter(name="r-one").update(generation={"temperature": 1.0})
    bench_batch.prompt_templates = {}
    bench_batch.save(update_fields=["prompt_templates"])
    assert run.prompts["receiver"] == {**DEFAULT_TEMPLATES, "receiver_retry": "Feedback: {feedback}\nTry again."}
    client.force_login(researcher)
    saved = client.get(f"/research/bench/{run.pk}/prompts.json").json()
    assert saved["generation"]["r-one"] == {"backend": "replay",
                                            "generation": {"temperature": 0.0, "max_new_tokens": 64}}
    assert set(saved["generation"]) == {"r-one", "p-one"}
    assert saved["prompts"]["receiver"]["receiver_retry"] == "Feedback: {feedback}\nTry again."
    page = client.get(f"/research/bench/{run.pk}/").content.decode()
    assert 'id="receiver-receiver_retry"' in page and 'id="generation-settings"' in page
    assert engine.Lane(run, 0, "t").templates["receiver_retry"] == "Feedback: {feedback}\nTry again."
