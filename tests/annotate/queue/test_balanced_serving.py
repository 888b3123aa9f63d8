"""A study compares models, so serving keeps the comparison balanced at every moment: models
interleaved per task, each annotator's models in turn and counterbalanced between annotators, all drawn from a seed
stored on the batch (set at import), and each session's place in its annotator's sequence exported."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from django.urls import reverse

from annotate.assignments import assignment_skip
from annotate.imports.batches import batch_import
from annotate.models import Assignment, Batch, Session, User
from tests.annotate.helpers import finish
from tests.annotate.imports.files import task, write_jsonl
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


def next_item(api_client, user, batch) -> dict:
    api_client.force_authenticate(user)
    response = api_client.post(reverse("api-next"), {"batch": batch.name}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def sessions_per_model(batch) -> Counter:
    return Counter(Session.objects.filter(batch=batch).values_list("model_config__name", flat=True))


def test_two_models_are_served_alike_at_every_moment(api_client):
    """The pilot of the report: 2 models, overlap 2, two named annotators, 11 tasks. Each may do each task once, so
    22 sessions can be served: 11 per model, in turn for each annotator, and the two start with different models."""
    models = [ModelConfigFactory(name="model-a"), ModelConfigFactory(name="model-b")]
    batch = make_batch(models=models, tasks=11, overlap=2)
    people = [UserFactory(username="pilot-1"), UserFactory(username="pilot-2")]
    batch.annotators.set(people)
    Batch.objects.filter(pk=batch.pk).update(annotators_named=True)
    batch.refresh_from_db()
    sequences: dict[str, list[str]] = {p.username: [] for p in people}
    while True:
        served = 0
        for person in people:
            body = next_item(api_client, person, batch)
            if body["state"] != "item":
                continue
            session = Session.objects.select_related("model_config", "assignment").get(pk=body["session_id"])
            sequences[person.username].append(session.model_config.name)
            finish(session.assignment)
            served += 1
            counts = sessions_per_model(batch)
            assert abs(counts["model-a"] - counts["model-b"]) <= 1, counts  # balanced at every moment
        if not served:
            break
    assert sessions_per_model(batch) == {"model-a": 11, "model-b": 11}
    for sequence in sequences.values():
        assert len(sequence) == 11
        assert all(a != b for a, b in zip(sequence, sequence[1:], strict=False)), sequence  # models in turn
    assert sequences["pilot-1"][0] != sequences["pilot-2"][0]  # counterbalanced: not always the same model first


def test_with_many_annotators_each_position_is_counterbalanced(api_client):
    """Annotators arriving one after another start at the next model of the cycle: over 6 people and 3 models,
    each model comes first twice."""
    batch = make_batch(models=[ModelConfigFactory() for _ in range(3)], tasks=6, overlap=2)
    firsts = Counter()
    for _ in range(6):
        body = next_item(api_client, UserFactory(), batch)
        firsts[Session.objects.get(pk=body["session_id"]).model_config_id] += 1
    assert sorted(firsts.values()) == [2, 2, 2]


def _walk(api_client, batch) -> list[tuple[str, str]]:
    """What one new annotator is served, in order, finishing each item."""
    person, served = UserFactory(), []
    while (body := next_item(api_client, person, batch))["state"] == "item":
        session = Session.objects.select_related("task", "model_config").get(pk=body["session_id"])
        served.append((session.task.external_id, session.model_config.name))
        finish(session.assignment)
    return served


def test_the_order_comes_from_a_seed_set_at_import_and_kept(tmp_path, api_client):
    ModelConfigFactory(name="seed-a")
    ModelConfigFactory(name="seed-b")
    path = write_jsonl(tmp_path / "tasks.jsonl", [task(f"t{i:02d}") for i in range(12)])
    orders = {}
    for name, seed in (("first", 1234), ("again", 1234), ("other", 99)):
        report = batch_import(path=path, name=name, kind="interfeedback",
                              settings={"models": "seed-a,seed-b", "seed": seed, "overlap": 3})
        assert report.ok, report.problems
        batch = Batch.objects.get(name=name)
        assert batch.serving_seed == seed
        orders[name] = _walk(api_client, batch)
    assert orders["first"] == orders["again"]  # the same seed: the same study, served alike
    assert orders["first"] != orders["other"]
    assert [external_id for external_id, _ in orders["first"]] != sorted(t for t, _ in orders["first"])  # shuffled
    # A batch that has served items keeps its seed: a new one is refused, naming it.
    report = batch_import(path=path, name="first", kind="interfeedback", settings={"seed": 7})
    assert not report.ok and report.problems[0].field == "settings.seed" and "1234" in report.problems[0].message
    assert Batch.objects.get(name="first").serving_seed == 1234
    # Without a seed, the batch draws one and keeps it.
    assert batch_import(path=path, name="drawn", kind="interfeedback", settings={"models": "seed-a"}).ok
    drawn = Batch.objects.get(name="drawn").serving_seed
    assert batch_import(path=path, name="drawn", kind="interfeedback").ok
    assert Batch.objects.get(name="drawn").serving_seed == drawn


def test_the_sessions_export_records_each_sessions_place_in_its_annotators_sequence(api_client, researcher):
    batch = make_batch(models=[ModelConfigFactory(), ModelConfigFactory()], tasks=4, members=[researcher])
    person = UserFactory()
    first = next_item(api_client, person, batch)
    finish(Session.objects.get(pk=first["session_id"]).assignment)
    second = next_item(api_client, person, batch)
    assignment_skip(assignment=Assignment.objects.get(session__id=second["session_id"]), reason="image broken")
    third = next_item(api_client, person, batch)
    finish(Session.objects.get(pk=third["session_id"]).assignment)
    other = next_item(api_client, UserFactory(), batch)
    finish(Session.objects.get(pk=other["session_id"]).assignment)

    api_client.force_authenticate(researcher)
    response = api_client.get(reverse("api-batch-sessions-jsonl", args=[batch.id]))
    assert response.status_code == 200
    records = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    positions = {record["session_id"]: record["sequence_position"] for record in records}
    # The skipped item counts in the sequence (it was served): the third item is at position 3.
    assert positions == {first["session_id"]: 1, third["session_id"]: 3, other["session_id"]: 1}


def test_each_person_sees_their_own_progress_in_tasks_not_pairs(client):
    """Nobody is served a task twice, so an annotator's "Remaining" counts tasks (11), not (task, model) pairs (22)."""
    batch = make_batch(models=[ModelConfigFactory(), ModelConfigFactory()], tasks=11, overlap=2)
    Batch.objects.filter(pk=batch.pk).update(items_per_participant=2)  # an invite-link limit: not theirs
    person = UserFactory()
    client.force_login(person)
    assert "Remaining: <strong>11</strong>" in client.get(reverse("home")).content.decode()
    page = client.post(reverse("next-item"), follow=True).content.decode()
    assert "Item 1 in this batch" in page and "in your share" not in page
    assert User.objects.get(pk=person.pk).crowd_batch_id is None
