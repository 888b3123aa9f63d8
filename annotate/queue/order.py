"""The order a batch serves its (task, model) pairs in, so that a comparison of models stays balanced at every
moment. Pure functions of the batch's seed: the same seed, tasks and models give the same order.

- The pool: tasks in an order shuffled by the seed; each task's pairs side by side (the models interleaved per
  task), the first model rotating from task to task along a cycle of the models (also drawn from the seed). Work
  items are created in this order, so their ids are the pool's order.
- Each annotator: their items follow the cycle of models (A, B, A, B, ... or B, A, B, A, ...), each starting at
  another place of it: the n-th annotator to start on a batch starts at model n mod M (rotation counterbalancing,
  a Latin square over the annotators). Their position in their own sequence is stored with each assignment.
"""

from __future__ import annotations

import random
from collections.abc import Sequence


def model_cycle(seed: int, model_ids: Sequence[int]) -> list[int]:
    """The batch's models in the order of the cycle: a permutation of the ids drawn from the seed."""
    cycle = sorted(model_ids)
    random.Random(seed).shuffle(cycle)
    return cycle


def serving_order(seed: int, task_ids: Sequence[int], model_ids: Sequence[int]) -> list[tuple[int, int]]:
    """Every (task, model) pair in the pool's order: tasks shuffled by the seed, then per task the models of the
    cycle, rotated by one place from one task to the next."""
    cycle = model_cycle(seed, model_ids)
    tasks = list(task_ids)
    random.Random(f"{seed}:tasks").shuffle(tasks)
    pairs: list[tuple[int, int]] = []
    for rank, task_id in enumerate(tasks):
        shift = rank % len(cycle) if cycle else 0
        pairs.extend((task_id, model_id) for model_id in cycle[shift:] + cycle[:shift])
    return pairs


def model_for(cycle: Sequence[int], *, previous: int | None, arrival: int) -> int | None:
    """The model an annotator's next item should be of: the one after their previous item's in the cycle, or for
    their first item, the cycle's model at their arrival index (the n-th annotator to start on the batch)."""
    if not cycle:
        return None
    if previous is None or previous not in cycle:
        return cycle[arrival % len(cycle)]
    return cycle[(cycle.index(previous) + 1) % len(cycle)]
