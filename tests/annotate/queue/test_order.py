"""The serving order's pure functions (annotate.queue.order): the same seed gives the same order; each task's pairs
side by side with the first model rotating; each annotator's models in turn from their arrival."""

from collections import Counter

import pytest

from annotate.queue.order import model_cycle, model_for, serving_order


def test_the_pool_interleaves_the_models_per_task_and_rotates_the_first():
    pairs = serving_order(7, task_ids=[10, 11, 12, 13], model_ids=[1, 2])
    cycle = model_cycle(7, [1, 2])
    tasks = [task for task, _ in pairs[::2]]
    assert sorted(tasks) == [10, 11, 12, 13] and len(pairs) == 8
    for rank, task in enumerate(tasks):  # each task's two pairs side by side, the first model alternating
        assert pairs[2 * rank: 2 * rank + 2] == [(task, cycle[rank % 2]), (task, cycle[(rank + 1) % 2])]
    assert Counter(model for _, model in pairs[:4]) == {1: 2, 2: 2}  # balanced in every prefix of whole tasks


def test_the_same_seed_gives_the_same_order_and_another_seed_another():
    tasks, models = list(range(100, 130)), [5, 3, 9]
    assert serving_order(42, tasks, models) == serving_order(42, list(tasks), list(reversed(models)))
    assert serving_order(42, tasks, models) != serving_order(43, tasks, models)
    assert serving_order(1, [], [1, 2]) == [] and serving_order(1, [1, 2], []) == []


@pytest.mark.parametrize("previous, arrival, expected", [
    (None, 0, "a"), (None, 1, "b"), (None, 2, "c"), (None, 3, "a"),  # newcomers start along the cycle
    ("a", 0, "b"), ("b", 5, "c"), ("c", 1, "a"),  # then the next model of the cycle, whatever their arrival
    ("gone", 1, "b"),  # a model no longer in the batch: as a newcomer
])
def test_each_annotator_takes_the_models_in_turn(previous, arrival, expected):
    assert model_for(["a", "b", "c"], previous=previous, arrival=arrival) == expected
    assert model_for([], previous=previous, arrival=arrival) is None
