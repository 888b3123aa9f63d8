"""A request that arrives while a batch runs waits for one slice of it, not for the whole batch: the batch ends its
slice, its unfinished rows go on in the next batch with the newcomer, and every row's answer stays the same.
Also the parts on their own: the scheduler's queue, the stopping criterion, the row streamer, the batch's rows."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from models_runtime import GenerationSettings, Message, ModelRequest, PermanentModelError
from models_runtime.backends.transformers import TransformersBackend
from models_runtime.batch_rows import EncodedPrompt, collate
from models_runtime.batching import BatchJob, BatchScheduler, RowsDone, RowStreamer, slice_pays
from models_runtime.tiny import build_tokenizer


def ask(text: str, max_new_tokens: int) -> ModelRequest:
    return ModelRequest(
        messages=(Message("user", (text,)),), settings=GenerationSettings(max_new_tokens=max_new_tokens)
    )


# -- the backend: a newcomer during a long answer ---------------------------------------------------------------


@pytest.mark.parametrize("slice_tokens", [4, 0])
def test_a_request_arriving_during_a_long_answer_waits_one_slice(tiny_causal_path, slice_tokens):
    backend = TransformersBackend({"path": tiny_causal_path, "device": "cpu", "batch_slice_tokens": slice_tokens})
    # Prompts whose answers run to their limit (no end-of-sequence token early): 150 tokens, then 12.
    long, short = ask("Look again.", 150), ask("Why?", 12)
    expected = [backend.stream(request).collect() for request in (long, short)]
    before = backend.batch_sizes
    finished: list[str] = []
    newcomer_results: list = []

    stream = backend.stream(long)
    chunks = iter(stream)
    first = next(chunks)  # the long answer is under way

    def newcomer() -> None:
        newcomer_results.append(backend.stream(short).collect())
        finished.append("short")

    thread = threading.Thread(target=newcomer)
    thread.start()
    text = first + "".join(chunks)
    finished.append("long")
    thread.join(30)

    assert text == expected[0].text and stream.result.completion_tokens == 150
    assert [(result.text, result.completion_tokens) for result in newcomer_results] == [
        (expected[1].text, expected[1].completion_tokens)
    ]
    ran = {size: count - before.get(size, 0) for size, count in backend.batch_sizes.items()}
    if slice_tokens:
        assert finished == ["short", "long"]
        assert ran == {1: 1, 2: 1}  # the long row's first slice, then both rows together
    else:
        assert finished == ["long", "short"]
        assert ran == {1: 2}
    backend.close()


# -- the scheduler ---------------------------------------------------------------------------------------------


def counting_batch(ran: list[list[str]], release: threading.Event):
    """A batch adds one token to each row, ends the rows that have all theirs, and hands back the others."""

    def run_batch(jobs):
        ran.append([job.payload for job in jobs])
        release.wait(5)
        for job in jobs:
            job.completion_tokens += 1
            if job.completion_tokens == job.max_new_tokens:
                job.end()
        return jobs

    return run_batch


def test_rows_that_go_on_come_first_in_the_next_batch_of_their_key():
    ran: list[list[str]] = []
    release = threading.Event()
    scheduler = BatchScheduler(counting_batch(ran, release), PermanentModelError, max_batch_size=2, wait_seconds=0)
    a1 = BatchJob("a1", "a", max_new_tokens=2)
    scheduler.submit(a1)
    while not ran:
        threading.Event().wait(0.01)
    later = [BatchJob("b1", "b", max_new_tokens=1), BatchJob("a2", "a", max_new_tokens=2)]
    for job in later:
        scheduler.submit(job)
    release.set()
    for job in (a1, *later):
        assert job.ended.wait(5) and job.error is None

    # a1 goes on with a2 (the same key) in front of b1; a2 then goes on alone; b1 waits for key a to finish.
    assert ran == [["a1"], ["a1", "a2"], ["a2"], ["b1"]]
    assert scheduler.batch_sizes == {1: 3, 2: 1}
    scheduler.close(PermanentModelError("closed"))


def test_a_row_whose_caller_left_is_not_run_again():
    ran: list[list[str]] = []
    release = threading.Event()
    # Both rows must start in one batch: a wait long enough for the second submit however busy the machine is.
    scheduler = BatchScheduler(counting_batch(ran, release), PermanentModelError, max_batch_size=2, wait_seconds=0.5)
    leaving, staying = BatchJob("leaving", "a", max_new_tokens=3), BatchJob("staying", "a", max_new_tokens=2)
    scheduler.submit(leaving)
    scheduler.submit(staying)
    while not ran:
        threading.Event().wait(0.01)
    leaving.cancel()
    release.set()

    assert staying.ended.wait(5) and leaving.ended.wait(5)
    assert leaving.error is None and leaving.completion_tokens == 1
    assert ran == [["leaving", "staying"], ["staying"]]
    scheduler.close(PermanentModelError("closed"))


def test_newcomers_are_waiting_requests_with_the_batch_key_as_many_as_there_is_room_for():
    scheduler = BatchScheduler(lambda jobs: jobs, PermanentModelError, max_batch_size=3, wait_seconds=0)
    running = [BatchJob("r1", "a", max_new_tokens=9)]
    assert scheduler.newcomers(running) == 0  # nobody waits

    scheduler._pending.append(BatchJob("o", "b"))  # queued without starting the thread
    assert scheduler.newcomers(running) == 0  # another key cannot join
    scheduler._pending.append(started := BatchJob("s", "a"))
    started.slices = 1
    assert scheduler.newcomers(running) == 0  # already served once: it waits its turn
    scheduler._pending.extend([BatchJob("n1", "a"), BatchJob("n2", "a")])
    assert scheduler.newcomers(running) == 2
    assert scheduler.newcomers([*running, BatchJob("r2", "a")]) == 1  # room for one beside two rows
    assert scheduler.newcomers([*running, BatchJob("r2", "a"), BatchJob("r3", "a")]) == 0  # full


@pytest.mark.parametrize(
    ("waiting", "running", "steps_left", "pays"),
    [
        (1, 1, 100, True),  # a long answer ahead: the newcomer should not wait for it
        (1, 15, 20, False),  # one newcomer would hold up fifteen rows near their end
        (4, 8, 20, True),  # four newcomers save 100 ms each, eight rows lose 40 ms each
        (4, 8, 0, False),  # the batch ends anyway
    ],
)
def test_a_slice_ends_early_only_when_the_waiting_it_saves_outweighs_building_the_batch_again(
    waiting, running, steps_left, pays
):
    # A decode step of 5 ms, 40 ms to build and prefill the batch again.
    assert slice_pays(waiting=waiting, running=running, steps_left=steps_left, step_seconds=0.005,
                      switch_seconds=0.04) is pays


# -- the stopping criterion and the streamer --------------------------------------------------------------------


def rows_done(jobs, *, switch_seconds: float, newcomers=lambda: 1) -> RowsDone:
    """A criterion whose batch took ``switch_seconds`` before its first token (steps are as fast as they come)."""
    return RowsDone(jobs, 4, max_new_tokens=100, newcomers=newcomers, slice_tokens=3,
                    started=time.perf_counter() - switch_seconds)


def step(done: RowsDone) -> list[bool]:
    time.sleep(0.002)  # a step of the batch
    return done(torch.zeros((4, 1), dtype=torch.long), None).tolist()


def test_rows_done_marks_filler_rows_and_ends_the_slice_for_newcomers_after_enough_tokens():
    jobs = [BatchJob(None, "k", max_new_tokens=100), BatchJob(None, "k", max_new_tokens=100)]
    jobs[1].cancel()
    asked = []
    done = rows_done(jobs, switch_seconds=0, newcomers=lambda: asked.append(1) or 1)

    assert step(done) == [False, True, True, True]
    assert step(done) == [False, True, True, True]
    assert asked == []  # not asked before the slice has its tokens
    assert step(done) == [True, True, True, True]
    assert asked == [1]
    timing = done.timing()
    assert (timing.rows, timing.steps) == (2, 2) and timing.step_seconds >= 0.002


def test_rows_done_keeps_the_slice_going_when_building_the_batch_again_costs_more():
    jobs = [BatchJob(None, "k", max_new_tokens=100)]
    slow_to_build = rows_done(jobs, switch_seconds=3600)
    without_newcomers = rows_done(jobs, switch_seconds=0, newcomers=lambda: 0)

    assert [step(slow_to_build) for _ in range(5)] == [[False, True, True, True]] * 5
    assert [step(without_newcomers) for _ in range(5)] == [[False, True, True, True]] * 5
    assert slow_to_build.timing().switch_seconds >= 3600


def test_rows_done_hands_generate_the_same_tensor_until_a_row_changes():
    """A new tensor is a copy to the GPU, which waits for the step to finish: not at every step."""
    jobs = [BatchJob(None, "k"), BatchJob(None, "k")]
    done = RowsDone(jobs, 2)
    ids = torch.zeros((2, 1), dtype=torch.long)
    first, second = done(ids, None), done(ids, None)
    jobs[0].cancel()
    third = done(ids, None)

    assert first is second and third is not second
    assert third.tolist() == [True, False] and first.tolist() == [False, False]


def test_a_row_ends_at_its_own_limit_and_one_that_goes_on_keeps_its_text_for_the_next_slice():
    tokenizer = build_tokenizer()
    text = "The answer is B. Thanks for the feedback"
    ids = tokenizer.encode(text, add_special_tokens=False)
    short, going_on = BatchJob(None, "k", max_new_tokens=3), BatchJob(None, "k", max_new_tokens=len(ids))
    first = RowStreamer(tokenizer, [short, going_on], [tokenizer.eos_token_id])
    first.put(torch.zeros((3, 2), dtype=torch.long))  # the prompt (and a filler row): skipped
    for token in ids[:5]:
        first.put(torch.tensor([token, token, 0]))
    first.end()

    assert short.ended.is_set() and short.completion_tokens == 3
    assert not going_on.ended.is_set() and going_on.goes_on and going_on.generated == ids[:5]
    second = RowStreamer(tokenizer, [going_on], [tokenizer.eos_token_id])
    second.put(torch.zeros((1, 9), dtype=torch.long))
    for token in ids[5:]:
        second.put(torch.tensor([token]))
    second.end()

    assert going_on.ended.is_set() and going_on.completion_tokens == len(ids)
    assert "".join(going_on.texts()) == text
    assert "".join(short.texts()) == tokenizer.decode(ids[:3])


# -- the rows of a batch --------------------------------------------------------------------------------------


def test_rows_are_left_padded_with_their_generated_tokens_and_filler_rows():
    image = EncodedPrompt([5, 6, 7], {"token_type_ids": torch.tensor([0, 1, 0])}, {"pixel_values": torch.ones(1, 3)},
                          {})
    text = EncodedPrompt([8], {}, {}, {})
    other_image = EncodedPrompt([9, 9], {"token_type_ids": torch.tensor([1, 1])}, {"pixel_values": torch.zeros(2, 3)},
                                {})

    batch = collate([(image, [1]), (text, [2, 3]), (other_image, [])], pad_token_id=0, filler_rows=1)

    assert batch["input_ids"].tolist() == [[5, 6, 7, 1], [0, 8, 2, 3], [0, 0, 9, 9], [0, 0, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1], [0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1]]
    assert batch["token_type_ids"].tolist() == [[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 1, 1], [0, 0, 0, 0]]
    assert batch["pixel_values"].tolist() == [[1, 1, 1], [0, 0, 0], [0, 0, 0]]  # images in row order


def test_rows_whose_other_values_differ_cannot_share_a_batch():
    rows = [(EncodedPrompt([1], {}, {}, {"mode": "a"}), []), (EncodedPrompt([2], {}, {}, {"mode": "b"}), [])]

    with pytest.raises(PermanentModelError, match='"mode" values that differ between rows'):
        collate(rows, pad_token_id=0)
