"""Attention checks reach everyone: each person's checks are planned when they start (from the batch's seed, never
their first item), served at those places, reused across people outside the overlap, never twice to one person,
kept out of the study's tables, and a supply short of the plan is said in words (study API, import)."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from annotate.imports.batches import batch_import
from annotate.models import Assignment, Batch, WorkItem
from annotate.queue.gold import check_supply, planned_positions
from annotate.queue.services import assignment_next, work_items_create_for_batch
from evaluation.interfeedback.services import outcome_recompute, outcome_record
from evaluation.models import CountedSession
from tests.annotate.crowd.study_data import join
from tests.annotate.helpers import finish
from tests.factories import ModelConfigFactory, TaskFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


# --- the plan ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rate, share, count", [(0.1, 3, 1), (0.3, 3, 1), (0.3, 10, 3), (0.5, 7, 4), (1.0, 4, 3)])
def test_a_share_plans_rate_times_share_checks_at_least_one_never_first(rate, share, count):
    for annotator_id in range(1, 40):
        plan = planned_positions(seed=7, annotator_id=annotator_id, rate=rate, share=share, up_to=share)
        assert len(plan) == count  # (1.0, 4): four planned, but the first item is never a check
        assert all(2 <= p <= share for p in plan) and plan == sorted(set(plan))
        assert plan == planned_positions(seed=7, annotator_id=annotator_id, rate=rate, share=share, up_to=share)


def test_plans_differ_between_people_and_seeds():
    def plan(seed, person):
        return tuple(planned_positions(seed=seed, annotator_id=person, rate=0.3, share=10, up_to=10))

    assert len({plan(7, person) for person in range(30)}) > 5  # not everyone meets checks at the same places
    assert sum(plan(7, person) != plan(8, person) for person in range(30)) > 15  # another seed, another plan


def test_without_a_share_one_check_in_every_block_of_one_over_rate():
    for annotator_id in range(1, 30):
        plan = planned_positions(seed=3, annotator_id=annotator_id, rate=0.25, share=None, up_to=40)
        assert len(plan) == 10
        for block, position in enumerate(plan):
            assert block * 4 + 1 <= position <= block * 4 + 4
        assert plan[0] >= 2  # the first check comes within the first 4 items, never first


@pytest.mark.parametrize("rate, share, gold, per_person, missing", [
    (0.1, 3, 1, 1, 0), (0.3, 10, 2, 3, 1), (0.3, 10, 0, 3, 3), (0.5, 1, 5, 1, 1), (0.2, None, 0, 1, 1),
    (0.0, 5, 0, 0, 0),
])
def test_check_supply_counts_what_is_missing(rate, share, gold, per_person, missing):
    supply = check_supply(rate=rate, share=share, gold_items=gold)
    assert (supply.per_person, supply.missing) == (per_person, missing)
    assert bool(supply.sentences()) == bool(missing)


def test_gold_items_without_a_rate_are_never_served_and_said_so(no_dispatch, simulated_model):
    batch = make_batch(models=[simulated_model], tasks=3)
    TaskFactory(batch=batch, is_gold=True)
    work_items_create_for_batch(batch=batch)
    served = walk(UserFactory(), batch)
    assert served == [False, False, False]
    assert "never be served" in check_supply(rate=0, share=None, gold_items=1).sentences()[0]


# --- serving ----------------------------------------------------------------------------------------------------


def gold_batch(models, *, tasks, gold, rate, overlap=1, share=None, **task_fields):
    """Ordinary tasks then gold ones, with their work items (the gold ones are attention checks)."""
    batch = make_batch(models=models, tasks=tasks, overlap=overlap, **task_fields)
    for _ in range(gold):
        TaskFactory(batch=batch, is_gold=True, **task_fields)
    work_items_create_for_batch(batch=batch)
    Batch.objects.filter(pk=batch.pk).update(gold_rate=rate, items_per_participant=share)
    batch.refresh_from_db()
    return batch


def walk(annotator, batch=None, limit=100):
    served = []
    while len(served) < limit and (assignment := assignment_next(annotator=annotator, batch=batch)) is not None:
        served.append(assignment.work_item.is_check)
        finish(assignment)
    return served


def test_every_participant_meets_their_planned_check_with_a_share_of_three(no_dispatch, simulated_model):
    """The issue's case: a share of 3 and a rate of 0.1 gave nobody a check; now each meets exactly one, at their
    planned place, and all three meet the same single gold item (outside the overlap of 1)."""
    batch = gold_batch([simulated_model], tasks=9, gold=1, rate=0.1, share=3)
    for _ in range(3):
        user = join(Client(), batch)
        served = walk(user)
        assert len(served) == 3 and served.count(True) == 1
        plan = planned_positions(seed=batch.serving_seed, annotator_id=user.pk, rate=0.1, share=3, up_to=3)
        assert [i + 1 for i, is_check in enumerate(served) if is_check] == plan
    check = WorkItem.objects.get(batch=batch, is_check=True)
    assert Assignment.objects.filter(work_item=check, status=Assignment.Status.COMPLETED).count() == 3
    # The ordinary items: 6 of the 9 done once each, none twice (the overlap holds for them).
    done = list(WorkItem.objects.filter(batch=batch, is_check=False).values_list("completed_count", flat=True))
    assert sorted(done) == [0, 0, 0, 1, 1, 1, 1, 1, 1]


def test_nobody_meets_the_same_check_twice_and_the_rest_are_ordinary(no_dispatch, simulated_model):
    batch = gold_batch([simulated_model], tasks=12, gold=1, rate=0.5)
    served = walk(UserFactory(), batch)
    assert served.count(True) == 1  # six checks planned, one gold item: met once
    assert len(served) == 13


def test_with_two_models_a_check_keeps_the_model_turn_and_never_the_same_task_twice(no_dispatch):
    models = [ModelConfigFactory(name="m-a", backend_settings={"chunk_delay": 0}),
              ModelConfigFactory(name="m-b", backend_settings={"chunk_delay": 0})]
    batch = gold_batch(models, tasks=8, gold=2, rate=0.25)
    user = UserFactory()
    seen_models, check_tasks = [], []
    while (assignment := assignment_next(annotator=user, batch=batch)) is not None:
        seen_models.append(assignment.work_item.model_config_id)
        if assignment.work_item.is_check:
            check_tasks.append(assignment.work_item.task_id)
        finish(assignment)
    assert len(check_tasks) == 2 and len(set(check_tasks)) == 2
    assert all(a != b for a, b in zip(seen_models, seen_models[1:], strict=False))  # A, B, A, B ... checks too


def test_a_check_whose_lease_ran_out_comes_again_at_the_next_item(no_dispatch, simulated_model):
    batch = gold_batch([simulated_model], tasks=6, gold=3, rate=0.5, share=4)
    user = join(Client(), batch)
    plan = planned_positions(seed=batch.serving_seed, annotator_id=user.pk, rate=0.5, share=4, up_to=4)
    served = []
    while (assignment := assignment_next(annotator=user)) is not None:
        served.append(assignment.work_item.is_check)
        if assignment.work_item.is_check and served.count(True) == 1:
            Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.EXPIRED)
            continue
        finish(assignment)
    assert served.count(True) == len(plan) + 1  # the expired one was made up for


def test_checks_stay_out_of_the_study_tables(no_dispatch, simulated_model):
    batch = gold_batch([simulated_model], tasks=2, gold=1, rate=1.0)
    user = UserFactory()
    while (assignment := assignment_next(annotator=user, batch=batch)) is not None:
        finish(assignment)
        outcome_record(session_id=assignment.session.id)
    counted = set(CountedSession.objects.filter(batch=batch).values_list("session__task__is_gold", flat=True))
    assert counted == {False}
    assert CountedSession.objects.filter(batch=batch).count() == 2  # the two ordinary items, not the check
    outcome_recompute(batch_id=batch.pk)
    assert set(CountedSession.objects.filter(batch=batch).values_list("session__task__is_gold", flat=True)) == {False}


# --- saying when the supply falls short -------------------------------------------------------------------------


def test_the_study_api_says_how_many_checks_are_missing(api_client, researcher, simulated_model):
    batch = gold_batch([simulated_model], tasks=10, gold=1, rate=0.3, share=10)
    batch.members.add(researcher)
    api_client.force_authenticate(researcher)
    body = api_client.get(reverse("api-batch-study", args=[batch.pk])).json()
    checks = body["attention_checks"]
    assert (checks["gold_items"], checks["per_participant"], checks["missing_per_participant"]) == (1, 3, 2)
    assert "2 missing per participant" in checks["warnings"][0]
    # The document goes back as it came (the read-only part is ignored).
    assert api_client.patch(reverse("api-batch-study", args=[batch.pk]), body, format="json").status_code == 200


def test_the_study_page_warns_in_words(client, researcher, simulated_model):
    batch = gold_batch([simulated_model], tasks=10, gold=0, rate=0.2, share=10)
    batch.members.add(researcher)
    client.force_login(researcher)
    html = client.get(reverse("research-study", args=[batch.pk])).content.decode()
    assert 'id="gold-warning"' in html and "each participant should meet 2, but 2 of them cannot be given" in html


def _tasks_file(tmp_path, records):
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def _record(i, **extra):
    return {"id": f"t{i}", "category": "count", "question": f"How many cats? ({i})", "answer_type": "number",
            "answer": "3", **extra}


def test_the_import_refuses_a_check_that_would_look_unlike_the_other_items(tmp_path, simulated_model):
    records = [_record(i) for i in range(4)] + [
        _record(9, answer_type="manual", gold=True, meta={"gold_check_type": "number"})]
    report = batch_import(path=_tasks_file(tmp_path, records), name="looks-apart", kind="interfeedback",
                          settings={"models": [simulated_model.name], "gold_rate": 0.2})
    assert report.status == "invalid" and not Batch.objects.filter(name="looks-apart").exists()
    assert any("would look unlike every other item" in p.message for p in report.problems)


def test_the_import_warns_when_checks_fall_short_or_cannot_be_scored(tmp_path, simulated_model):
    records = [_record(i) for i in range(4)] + [_record(8, gold=True), _record(9, category="attention", gold=True,
                                                                            meta={"gold_feedback_terms": ["cats"]})]
    report = batch_import(path=_tasks_file(tmp_path, records), name="short", kind="interfeedback",
                          settings={"models": [simulated_model.name], "gold_rate": 0.0})
    assert report.status == "imported"
    text = " ".join(report.warnings)
    assert "cannot be scored" in text and "t8" in text
    assert "category 'attention'" in text
    assert "2 gold items will never be served" in text
    assert set(WorkItem.objects.filter(batch__name="short", is_check=True).values_list("task__external_id",
                                                                                       flat=True)) == {"t8", "t9"}


def test_gold_feedback_terms_must_be_a_list_of_words(tmp_path, simulated_model):
    records = [_record(1), _record(2, gold=True, meta={"gold_feedback_terms": "cats"})]
    report = batch_import(path=_tasks_file(tmp_path, records), name="bad-terms", kind="interfeedback",
                          settings={"models": [simulated_model.name]})
    assert report.status == "invalid"
    assert any(p.field == "meta.gold_feedback_terms" for p in report.problems)
