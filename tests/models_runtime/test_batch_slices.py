"""A request that arrives while a batch runs waits for one slice of it, not for the whole batch: the batch ends its
slice, its unfinished rows go on in the next batch with the newcomer, and every row's answer stays the same.
Also the parts on their own: the scheduler's queue, the stopping criterion, the row streamer, the batch's rows."""

from __future__ import annotations

import threading

import pytest
import torch

from models_runtime import GenerationSettings, Message, ModelRequest, PermanentModelError
from models_runtime.backends.transformers import TransformersBackend
from models_runtime.batch_rows import EncodedPrompt, collate
from models_runtime.batching import BatchJob, BatchScheduler, RowsDone, RowStreamer
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
    scheduler = BatchScheduler(counting_batch(ran, release), PermanentModelError, max_batch_size=2, wait_seconds=0)
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


def test_a_batch_makes_way_only_for_newcomers_with_its_key_that_have_room():
    scheduler = BatchScheduler(lambda jobs: jobs, PermanentModelError, max_batch_size=2, wait_seconds=0)
    running = [BatchJob("r1", "a", max_new_tokens=9)]
    assert not scheduler.should_make_way(running)  # nobody waits

    scheduler._pending.append(other := BatchJob("o", "b"))  # queued without starting the thread
    assert not scheduler.should_make_way(running)  # another key cannot join
    scheduler._pending.append(started := BatchJob("s", "a"))
    started.slices = 1
    assert not scheduler.should_make_way(running)  # already served once: it waits its turn
    scheduler._pending.append(BatchJob("n", "a"))
    assert scheduler.should_make_way(running)
    assert not scheduler.should_make_way([*running, BatchJob("r2", "a")])  # the next batch would be full
    del other


# -- the stopping criterion and the streamer --------------------------------------------------------------------


def test_rows_done_marks_filler_rows_and_ends_the_slice_when_asked_after_enough_tokens():
    jobs = [BatchJob(None, "k"), BatchJob(None, "k")]
    jobs[1].cancel()
    asked = []
    done = RowsDone(jobs, 4, make_way=lambda: asked.append(1) or True, slice_tokens=3)
    ids = torch.zeros((4, 1), dtype=torch.long)

    assert done(ids, None).tolist() == [False, True, True, True]
    assert done(ids, None).tolist() == [False, True, True, True]
    assert asked == []  # not asked before the slice has its tokens
    assert done(ids, None).tolist() == [True, True, True, True]
    assert asked == [1]


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
