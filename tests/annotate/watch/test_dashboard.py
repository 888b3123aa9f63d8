"""The live study dashboard: its numbers on a batch with finished, under-way and skipped items, a failed model call
and a leak warning; who may see it (page, API, WebSocket); and pushes over the WebSocket when work is finished."""

import json
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import path, reverse
from django.utils import timezone

from annotate.assignments import assignment_skip
from annotate.models import Assignment, LeakWarning, Round, User
from annotate.queue.services import assignment_next
from annotate.watch.consumers import CLOSE_NOT_ALLOWED, DashboardConsumer
from annotate.watch.selectors import batch_dashboard
from tests.annotate.helpers import finish
from tests.factories import ModelConfigFactory, UserFactory, make_batch


@pytest.fixture
def study(researcher, no_dispatch):
    models = [ModelConfigFactory(name="m-a", display_name="Model A"), ModelConfigFactory(name="m-b")]
    batch = make_batch(models=models, tasks=2, overlap=1, members=[researcher])  # 4 items, K=1
    done_by, working, skipping = UserFactory(), UserFactory(), UserFactory()
    finished = assignment_next(annotator=done_by, batch=batch)
    finish(finished)
    under_way = assignment_next(annotator=working, batch=batch)
    skipped = assignment_next(annotator=skipping, batch=batch)
    assignment_skip(assignment=skipped, reason="image does not load")
    Round.objects.filter(session=under_way.session).update(generation_status="failed", error="HTTP 500")
    LeakWarning.objects.create(session=under_way.session, annotator=working, round_index=1, stated_answer="B")
    # Work happened from 30 minutes ago until now (the one under way): half an hour, one item done.
    now = timezone.now()
    Assignment.objects.filter(pk=finished.pk).update(created_at=now - timedelta(minutes=30),
                                                     finished_at=now - timedelta(minutes=10))
    Assignment.objects.filter(pk=under_way.pk).update(created_at=now - timedelta(minutes=20))
    return batch


@pytest.mark.django_db
def test_the_snapshot_counts_what_happened(study):
    d = batch_dashboard(study)
    assert d["totals"] == {"needed": 4, "done": 1, "in_progress": 1, "left": 2}
    assert sum(row["needed"] for row in d["by_model"]) == 4
    assert {row["name"] for row in d["by_model"]} == {"Model A", "m-b"}  # display names where set
    assert sum(row["done"] for row in d["by_category"]) == 1
    assert d["active_annotators"] == 1
    assert d["skips"] == [{"reason": "image does not load", "count": 1}] and d["skips_total"] == 1
    assert d["leak_warnings"] == 1
    assert sum(e["failing_now"] for e in d["model_errors"]) == 1
    assert d["cumulative"][-1] == 1 and sum(h["completed"] for h in d["per_hour"]) == 1
    assert d["pace_per_hour"] == pytest.approx(2, abs=0.01) and d["eta_seconds"] == pytest.approx(3600, abs=2)
    # The broker is not running for in-process tests: depths are "unknown" (the browser test sees real ones).
    assert [q["queue"] for q in d["queues"]] == ["model.simulated"]


@pytest.mark.django_db
def test_page_and_api_are_for_the_batch_researchers(client, api_client, study, researcher):
    client.force_login(researcher)
    page = client.get(reverse("research-dashboard", args=[study.id]))
    assert page.status_code == 200 and 'id="total-done">1<' in page.content.decode()
    api_client.force_authenticate(researcher)
    assert api_client.get(reverse("api-batch-dashboard", args=[study.id])).json()["totals"]["done"] == 1
    outsider = UserFactory(role=User.Role.RESEARCHER)
    client.force_login(outsider)
    assert client.get(reverse("research-dashboard", args=[study.id])).status_code == 404
    api_client.force_authenticate(outsider)
    assert api_client.get(reverse("api-batch-dashboard", args=[study.id])).status_code == 404
    api_client.force_authenticate(UserFactory(role=User.Role.ANNOTATOR))
    assert api_client.get(reverse("api-batch-dashboard", args=[study.id])).status_code == 403


def _communicator(user, batch_id):
    app = URLRouter([path("ws/batches/<int:batch_id>/dashboard/", DashboardConsumer.as_asgi())])
    comm = WebsocketCommunicator(app, f"/ws/batches/{batch_id}/dashboard/")
    comm.scope["user"] = user
    return comm


@pytest.mark.django_db(transaction=True)
def test_the_socket_pushes_fresh_numbers_and_refuses_others(settings, researcher, simulated_model, no_dispatch):
    settings.DASHBOARD_REFRESH_SECONDS = 0.1
    batch = make_batch(models=[simulated_model], tasks=2, overlap=1, members=[researcher])
    annotator = UserFactory()

    async def scenario():
        comm = _communicator(researcher, batch.id)
        connected, _ = await comm.connect()
        assert connected
        first = await comm.receive_json_from(timeout=5)
        assert first["type"] == "dashboard" and first["dashboard"]["totals"]["done"] == 0
        await database_sync_to_async(lambda: finish(assignment_next(annotator=annotator, batch=batch)))()
        pushed = await comm.receive_json_from(timeout=5)
        assert pushed["dashboard"]["totals"]["done"] == 1
        await comm.disconnect()

        refused = _communicator(UserFactory.build(role=User.Role.ANNOTATOR, pk=10**6), batch.id)
        connected, code = await refused.connect()
        assert not connected and code == CLOSE_NOT_ALLOWED

    async_to_sync(scenario)()


@pytest.mark.django_db
def test_the_command_prints_what_the_api_gives(api_client, study, researcher, capsys):
    api_client.force_authenticate(researcher)
    api = api_client.get(reverse("api-batch-dashboard", args=[study.id])).json()
    call_command("dashboard", "--batch", study.name, "--json")
    printed = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in printed.items() if k != "generated_at"} == {
        k: v for k, v in api.items() if k != "generated_at"}
    call_command("dashboard", "--batch", study.name)
    text = capsys.readouterr().out
    assert "Progress: needed 4, done 1, in progress 1, left 2" in text
    assert "ETA 1:00:0" in text and "annotators working now: 1" in text
    assert "  Model A\t" in text and "image does not load\t1" in text and "Leak warnings: 1" in text
    with pytest.raises(CommandError, match="No batch named 'nope'"):
        call_command("dashboard", "--batch", "nope")
