"""Replay plays back the answers recorded in the batch, round by round."""

from __future__ import annotations

import pytest

from models_runtime import Message, ModelRequest, PermanentModelError, TaskContext
from models_runtime.backends.replay import ReplayBackend

RECORDED = ("I think it is a cat.\nAnswer: cat", "Sorry, it is a dog.\nAnswer: dog")


def replay(round_index: int, recorded=RECORDED):
    context = TaskContext(task_id="t7", round_index=round_index, recorded_answers=recorded)
    return ReplayBackend({"chunk_delay": 0}).stream(
        ModelRequest(messages=(Message.text("user", "What animal is it?"),), context=context)
    )


@pytest.mark.parametrize("round_index", [0, 1])
def test_plays_the_recorded_answer_of_the_round_in_chunks(round_index):
    stream = replay(round_index)

    chunks = list(stream)

    assert len(chunks) > 1
    assert "".join(chunks) == stream.result.text == RECORDED[round_index]
    assert stream.result.completion_tokens == len(RECORDED[round_index].split())
    assert stream.result.prompt_tokens == 4


@pytest.mark.parametrize(
    ("round_index", "recorded"), [(2, RECORDED), (0, ()), (1, ("only one",)), (0, (None,))]
)
def test_missing_answer_is_a_permanent_error_naming_the_round(round_index, recorded):
    with pytest.raises(PermanentModelError, match=f"round {round_index} of task 't7'"):
        replay(round_index, recorded).collect()


def test_unknown_setting():
    with pytest.raises(PermanentModelError, match="unknown replay setting"):
        ReplayBackend({"answers": []})
