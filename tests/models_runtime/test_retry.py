"""The one retry layer (models_runtime.retry, applied by Backend.stream to every backend)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from models_runtime import (
    Backend,
    EmptyAnswerError,
    Message,
    ModelRequest,
    PermanentModelError,
    RetryPolicy,
    Stream,
    StreamBrokenError,
    TransientModelError,
)
from models_runtime.retry import GiveUp

REQUEST = ModelRequest(messages=(Message.text("user", "hi"),))


class Scripted(Backend):
    """Each call plays the next script: a list of chunks, where an exception is raised when reached."""

    name = "scripted"

    def __init__(self, scripts: list[list], policy: RetryPolicy):
        super().__init__()
        self.scripts = scripts
        self.retry_policy = policy
        self.calls = 0

    def _chunks(self, request: ModelRequest, stream: Stream) -> Iterator[str]:
        script = self.scripts[self.calls]
        self.calls += 1
        for item in script:
            if isinstance(item, Exception):
                raise item
            yield item


FAST = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.001, total_seconds=5)


# --- the policy's arithmetic ----------------------------------------------------------------------------------


def test_backoff_is_exponential_with_full_jitter_capped_at_max_delay():
    policy = RetryPolicy(base_delay=0.5, max_delay=3.0)
    rng = random.Random(0)

    # before attempt n: uniform(0, min(3, 0.5 * 2**(n-2))): 0.5, 1, 2, then capped at 3
    for attempt, ceiling in [(2, 0.5), (3, 1.0), (4, 2.0), (5, 3.0), (9, 3.0)]:
        waits = [policy.wait_before(attempt, None, rng) for _ in range(200)]
        assert all(0 <= wait <= ceiling for wait in waits)
        assert max(waits) > ceiling * 0.9  # the whole range is used (full jitter), not just its bottom


def test_retry_after_is_a_floor_with_up_to_jitter_on_top():
    policy = RetryPolicy(jitter=0.2, max_delay=1.0)
    rng = random.Random(1)

    waits = [policy.wait_before(2, 10.0, rng) for _ in range(200)]

    assert all(10.0 <= wait <= 12.0 for wait in waits)  # never earlier than asked, even past max_delay
    assert max(waits) - min(waits) > 1.5  # spread: the crowd the server told "10" does not return at once


def test_next_wait_stops_at_max_attempts():
    policy = RetryPolicy(max_attempts=3, base_delay=0.1, total_seconds=60)

    assert isinstance(policy.next_wait(1, 0.0, None), float)
    assert isinstance(policy.next_wait(2, 0.2, None), float)
    give_up = policy.next_wait(3, 0.5, None)
    assert give_up == GiveUp("gave up after 3 attempt(s) in 0.5 s")


def test_next_wait_never_runs_past_the_budget():
    policy = RetryPolicy(max_attempts=10, base_delay=100.0, max_delay=100.0, total_seconds=60)

    assert policy.next_wait(2, 58.0, None) <= 2.0  # backoff cut to what is left
    assert "budget is spent" in policy.next_wait(3, 60.0, None).reason
    # A Retry-After that does not fit is not shortened: the call gives up instead.
    too_long = policy.next_wait(1, 50.0, 15.0)
    assert isinstance(too_long, GiveUp)
    assert "asked to wait 15 s (Retry-After), more than the 10.0 s left of the 60 s retry budget" in too_long.reason
    assert 15.0 <= policy.next_wait(1, 40.0, 15.0) <= 20.0  # fits: honoured, jitter cut at the budget


@pytest.mark.parametrize(("field", "value"), [("max_attempts", 0), ("base_delay", -1), ("total_seconds", -5)])
def test_bad_policy_values_are_refused_by_name(field, value):
    with pytest.raises(ValueError, match=f"RetryPolicy.{field} must be >= "):
        RetryPolicy(**{field: value})


# --- Backend.stream applies it to every backend -----------------------------------------------------------------


def test_transient_errors_before_the_first_chunk_are_retried():
    backend = Scripted([[TransientModelError("busy")], [TransientModelError("busy")], ["ok ", "then"]], FAST)

    assert backend.stream(REQUEST).collect().text == "ok then"
    assert backend.calls == 3


def test_the_last_transient_error_says_how_many_attempts_were_made():
    backend = Scripted([[TransientModelError(f"busy {n}", retry_after=0.01)] for n in range(5)], FAST)

    with pytest.raises(TransientModelError, match=r"gave up after 3 attempt\(s\) in .* s: busy 2") as error:
        backend.stream(REQUEST).collect()
    assert backend.calls == 3 and error.value.retry_after == 0.01


@pytest.mark.parametrize("error", [PermanentModelError("bad key"), EmptyAnswerError("nothing")])
def test_other_model_errors_are_not_retried(error):
    backend = Scripted([[error], ["never"]], FAST)

    with pytest.raises(type(error)):
        backend.stream(REQUEST).collect()
    assert backend.calls == 1


@pytest.mark.parametrize("error", [TransientModelError("reset"), PermanentModelError("decode failed")])
def test_any_model_error_after_the_first_chunk_is_a_broken_stream_with_the_text(error):
    backend = Scripted([["Counting ", "the ", error], ["never"]], FAST)
    stream = backend.stream(REQUEST)

    with pytest.raises(StreamBrokenError, match="broke off after 13 characters") as caught:
        stream.collect()

    assert caught.value.partial_text == "Counting the "
    assert caught.value.__cause__ is error
    assert backend.calls == 1 and stream.result is None


def test_an_empty_stream_is_an_empty_answer_for_every_backend():
    backend = Scripted([["", ""]], FAST)

    with pytest.raises(EmptyAnswerError, match="ended without text"):
        backend.stream(REQUEST).collect()
    assert backend.calls == 1


def test_the_simulated_backend_is_retried_by_the_same_layer():
    from models_runtime import TaskContext
    from models_runtime.backends.simulated import SimulatedBackend

    SimulatedBackend.reset_failure_counters()
    backend = SimulatedBackend({"chunk_delay": 0, "fail_transient_times": 2})
    backend.retry_policy = FAST
    context = TaskContext(task_id="retry-layer", answer_type="number", ground_truth="3")

    result = backend.stream(ModelRequest(messages=(Message.text("user", "How many?"),), context=context)).collect()

    assert result.text.strip().splitlines()[-1].startswith("Answer:")
    assert SimulatedBackend._transient_calls[("retry-layer", 0)] == 3  # two failures, then the answer


def test_an_unreached_server_is_tried_until_the_budget_not_only_max_attempts():
    policy = RetryPolicy(max_attempts=3, base_delay=0.5, total_seconds=10)
    assert isinstance(policy.next_wait(3, 1.0, None), GiveUp)  # a server that answered badly: three tries
    assert not isinstance(policy.next_wait(3, 1.0, None, unreached=True), GiveUp)
    assert not isinstance(policy.next_wait(12, 9.0, None, unreached=True), GiveUp)
    given_up = policy.next_wait(12, 10.0, None, unreached=True)
    assert isinstance(given_up, GiveUp) and "10 s retry budget is spent" in given_up.reason
