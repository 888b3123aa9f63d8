"""The simulated student: wrong first, right once told, never leaking the ground truth when wrong."""

from __future__ import annotations

import pytest

from models_runtime import (
    Message,
    ModelRequest,
    PermanentModelError,
    RetryPolicy,
    TaskContext,
    TransientModelError,
)
from models_runtime.backends.simulated import SimulatedBackend

OPTIONS = ("Paris", "London", "Berlin", "Madrid")


def request(context: TaskContext, feedback: str = "Please look again.") -> ModelRequest:
    messages = [Message.text("user", "Which city is shown?")]
    if context.round_index > 0:
        messages += [Message.text("assistant", "Answer: A"), Message.text("user", feedback)]
    return ModelRequest(messages=tuple(messages), context=context)


def answer_line(text: str) -> str:
    last = text.splitlines()[-1]
    assert last.startswith("Answer: "), text
    return last.removeprefix("Answer: ")


def run(context: TaskContext, feedback: str = "Please look again.", **settings) -> str:
    backend = SimulatedBackend({"chunk_delay": 0, **settings})
    stream = backend.stream(request(context, feedback))
    chunks = list(stream)
    assert "".join(chunks) == stream.result.text
    assert len(chunks) > 3  # streamed word by word
    return stream.result.text


CASES = [
    TaskContext(task_id="t-choice", answer_type="choice", options=OPTIONS, ground_truth="C"),
    TaskContext(task_id="t-choice-text", answer_type="choice", options=OPTIONS, ground_truth="Berlin"),
    TaskContext(task_id="t-number", answer_type="number", ground_truth="42"),
    TaskContext(task_id="t-float", answer_type="number", ground_truth="2.5"),
    TaskContext(task_id="t-text", answer_type="text", ground_truth="a green triangle"),
    TaskContext(task_id="t-manual", answer_type="manual", ground_truth="no"),
]
EXPECTED = {
    "t-choice": "C",
    "t-choice-text": "C",
    "t-number": "42",
    "t-float": "2.5",
    "t-text": "a green triangle",
    "t-manual": "no",
}


@pytest.mark.parametrize("context", CASES, ids=lambda c: c.task_id)
def test_wrong_at_round_zero_even_when_the_prompt_gives_it_away(context):
    text = run(context, feedback=f"The answer is {context.ground_truth}")

    assert answer_line(text) != EXPECTED[context.task_id]


@pytest.mark.parametrize("context", CASES, ids=lambda c: c.task_id)
def test_corrected_once_the_feedback_contains_the_ground_truth(context):
    told = TaskContext(**{**context.__dict__, "round_index": 1})

    assert answer_line(run(told, feedback="Not quite. Think about the details.")) != EXPECTED[context.task_id]
    assert (
        answer_line(run(told, feedback=f"Hint: the answer is {context.ground_truth.upper()}."))
        == EXPECTED[context.task_id]
    )


def test_choice_accepts_the_option_text_and_ignores_the_article_a():
    context = TaskContext(task_id="t", round_index=2, answer_type="choice", options=OPTIONS, ground_truth="A")

    assert answer_line(run(context, feedback="It is the capital of France, paris.")) == "A"
    assert answer_line(run(context, feedback="Take a closer look at a detail.")) != "A"
    assert answer_line(run(context, feedback="I think the answer is a.")) == "A"


def test_number_is_compared_as_a_number_not_as_a_substring():
    context = TaskContext(task_id="n", round_index=1, answer_type="number", ground_truth="42")

    assert answer_line(run(context, feedback="It is not 421.")) != "42"
    assert answer_line(run(context, feedback="Count again: 42.0 objects.")) == "42"


def test_correct_from_round_without_being_told():
    context = TaskContext(task_id="r", answer_type="number", ground_truth="7")
    at = lambda k: TaskContext(**{**context.__dict__, "round_index": k})  # noqa: E731

    assert answer_line(run(at(1), correct_from_round=2)) != "7"
    assert answer_line(run(at(2), correct_from_round=2)) == "7"
    assert answer_line(run(at(0), correct_from_round=0)) != "7"  # round 0 is always wrong


@pytest.mark.parametrize(
    ("answer_type", "ground_truth", "options"),
    [
        ("number", "42", ()),
        ("number", "1", ()),
        ("number", "0", ()),
        ("number", "2", ()),
        ("number", "0.5", ()),
        ("text", "no", ()),
        ("text", "yes", ()),
        ("text", "blue", ()),
        ("text", "the", ()),
        ("text", "e", ()),
        ("manual", "I am not sure", ()),
        ("choice", "B", OPTIONS),
        ("choice", "A", ()),
        ("choice", "London", OPTIONS),
    ],
)
def test_wrong_answers_never_contain_the_ground_truth(answer_type, ground_truth, options):
    for task in range(15):
        for round_index in range(4):
            context = TaskContext(
                task_id=f"task-{task}",
                round_index=round_index,
                answer_type=answer_type,
                options=options,
                ground_truth=ground_truth,
            )
            text = run(context, feedback="Look again.")
            answer = answer_line(text)
            assert ground_truth.lower() not in answer.lower(), (context, text)
            if len(ground_truth) > 1 and answer_type != "choice":
                assert ground_truth.lower() not in text.lower(), (context, text)
            if answer_type == "choice":
                assert answer in "ABCD" and answer != ("B" if ground_truth in ("B", "London") else "A")


def test_wrong_answers_are_deterministic_and_vary_by_round():
    contexts = [
        TaskContext(task_id="d", round_index=k, answer_type="number", ground_truth="12") for k in range(6)
    ]

    first = [run(context) for context in contexts]

    assert first == [run(context) for context in contexts]
    assert len({answer_line(text) for text in first}) > 1


def test_token_counts_are_word_counts():
    context = TaskContext(task_id="w", answer_type="text", ground_truth="cat")

    result = SimulatedBackend({"chunk_delay": 0}).stream(request(context)).collect()

    assert result.completion_tokens == len(result.text.split())
    assert result.prompt_tokens == len("Which city is shown?".split())


def test_fail_permanent():
    context = TaskContext(task_id="p", round_index=1)

    with pytest.raises(PermanentModelError, match="simulated permanent failure.*'p' round 1"):
        SimulatedBackend({"fail": "permanent"}).stream(request(context)).collect()


def test_fail_transient_times_counts_per_task_and_round():
    backend = SimulatedBackend({"chunk_delay": 0, "fail_transient_times": 2})
    backend.retry_policy = RetryPolicy(max_attempts=1)  # each call one attempt: the counter is what is tested
    first = TaskContext(task_id="flaky", answer_type="number", ground_truth="3")
    second_round = TaskContext(task_id="flaky", round_index=1, answer_type="number", ground_truth="3")

    for attempt in (1, 2):
        with pytest.raises(TransientModelError, match=f"{attempt} of 2"):
            backend.stream(request(first)).collect()
    assert backend.stream(request(first)).collect().text.startswith(("Looking", "I compared", "Reading"))
    with pytest.raises(TransientModelError):
        backend.stream(request(second_round)).collect()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"fail": "sometimes"}, '"fail"'),
        ({"correct_from_round": "2"}, "correct_from_round"),
        ({"delay": 1}, "unknown simulated setting"),
    ],
)
def test_bad_settings(settings, message):
    with pytest.raises(PermanentModelError, match=message):
        SimulatedBackend(settings)
