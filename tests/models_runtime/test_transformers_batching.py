"""Dynamic batching in the transformers backend: concurrent requests share one generate() and each still gets
the answer it would get alone. Tiny random-weight checkpoints; the scheduler waits long enough (2 s at most,
cut short once the batch is full) for the batch to form deterministically."""

from __future__ import annotations

import json
import shutil
import threading
import time

import pytest
import torch

from models_runtime import (
    GenerationSettings,
    ImagePart,
    Message,
    ModelRequest,
    PermanentModelError,
    RetryPolicy,
    TransientModelError,
)
from models_runtime.backends.transformers import TransformersBackend
from models_runtime.batching import BatchJob, BatchScheduler, RowStreamer
from tests.models_runtime.helpers import together

PROMPTS = [
    "Hi?",
    "What is shown in the image? Answer with the letter.",
    "Count the objects and give a number, please, thanks.",
    "Colours?",
]


def ask(text: str, *images, **generation) -> ModelRequest:
    generation.setdefault("max_new_tokens", 12)
    return ModelRequest(
        messages=(Message("user", (*(ImagePart(image) for image in images), text)),),
        settings=GenerationSettings(**generation),
    )


def backend(path: str, **settings) -> TransformersBackend:
    return TransformersBackend({"path": path, "device": "cpu", **settings})


def alone(backend: TransformersBackend, requests: list[ModelRequest]) -> list:
    return [backend.stream(request).collect() for request in requests]


def summary(results) -> list[tuple]:
    return [(result.text, result.prompt_tokens, result.completion_tokens) for result in results]


@pytest.fixture(scope="module")
def causal_one_at_a_time(tiny_causal_path):
    one = backend(tiny_causal_path, max_batch_size=1)
    yield one
    one.close()


# -- (a) text-only, (b) with images -------------------------------------------------------------------------


def test_four_concurrent_requests_run_as_one_batch_with_the_answers_they_get_alone(
    tiny_causal_path, causal_one_at_a_time
):
    requests = [ask(prompt) for prompt in PROMPTS]
    expected = alone(causal_one_at_a_time, requests)
    batched = backend(tiny_causal_path, max_batch_size=4, batch_wait_ms=2000)

    results = together(batched, requests)

    assert batched.batch_sizes == {4: 1}
    assert summary(results) == summary(expected)
    assert len({result.prompt_tokens for result in results}) > 1  # rows of different lengths: padding happened
    assert causal_one_at_a_time.batch_sizes.get(1, 0) >= 4 and set(causal_one_at_a_time.batch_sizes) == {1}
    batched.close()


def test_max_batch_size_one_runs_concurrent_requests_one_at_a_time(causal_one_at_a_time):
    requests = [ask(prompt) for prompt in PROMPTS]
    expected = alone(causal_one_at_a_time, requests)
    before = causal_one_at_a_time.batch_sizes[1]

    results = together(causal_one_at_a_time, requests)

    assert summary(results) == summary(expected)
    assert causal_one_at_a_time.batch_sizes == {1: before + 4}


def test_llava_batch_with_images_in_some_rows(tiny_llava_path, png_bytes):
    requests = [
        ask(prompt, *([png_bytes] if index in (1, 2) else []), max_new_tokens=10)
        for index, prompt in enumerate(PROMPTS)
    ]
    one = backend(tiny_llava_path, max_batch_size=1)
    expected = alone(one, requests)
    batched = backend(tiny_llava_path, max_batch_size=4, batch_wait_ms=2000)

    results = together(batched, requests)

    assert batched.batch_sizes == {4: 1}
    assert summary(results) == summary(expected)
    # The image rows carry 16 image tokens each: the processor saw the flat image list in row order.
    assert results[1].prompt_tokens - expected[0].prompt_tokens > 16
    one.close()
    batched.close()


def test_a_row_that_ends_early_stops_alone_and_counts_its_eos(tiny_causal_path, causal_one_at_a_time, tmp_path):
    """A copy of the checkpoint whose EOS also includes a token the first answer produces early on."""
    requests = [ask(prompt) for prompt in PROMPTS]
    first = causal_one_at_a_time.stream(requests[0]).collect().text
    early_token = causal_one_at_a_time.tokenizer.encode(first)[1]
    path = shutil.copytree(tiny_causal_path, tmp_path / "early-eos")
    config = json.loads((path / "generation_config.json").read_text())
    config["eos_token_id"] = [config["eos_token_id"], early_token]
    (path / "generation_config.json").write_text(json.dumps(config))
    one = backend(str(path), max_batch_size=1)
    expected = alone(one, requests)
    lengths = [result.completion_tokens for result in expected]
    assert min(lengths) < 12 and max(lengths) == 12, lengths  # some rows end at "EOS", some run to the limit
    batched = backend(str(path), max_batch_size=4, batch_wait_ms=2000)

    results = together(batched, requests)

    assert batched.batch_sizes == {4: 1}
    assert summary(results) == summary(expected)  # completion counts include the EOS, never the padding after it
    one.close()
    batched.close()


# -- (c) one reader stopping does not stop the others -----------------------------------------------------------


def test_a_reader_that_stops_early_leaves_the_other_rows_running(tiny_causal_path, causal_one_at_a_time):
    plain = [ask(prompt, max_new_tokens=24) for prompt in PROMPTS]
    expected = alone(causal_one_at_a_time, plain)
    stop = expected[0].text[4:7]
    cut = expected[0].text[: expected[0].text.find(stop)]
    requests = [ask(PROMPTS[0], max_new_tokens=24, stop=[stop]), *plain[1:]]
    batched = backend(tiny_causal_path, max_batch_size=4, batch_wait_ms=2000)
    walked_away: list[str] = []

    def read(index, stream):
        if index == 3:  # this caller leaves after the first chunk
            walked_away.extend(next(iter(stream)))
            stream.close()
            return stream.result
        return stream.collect()

    results = together(batched, requests, read=read)

    assert batched.batch_sizes == {4: 1}
    assert results[0].text == cut and results[0].completion_tokens < 24
    assert summary(results[1:3]) == summary(expected[1:3])
    assert results[3] is None and "".join(walked_away)
    # Nothing was left holding the model: the next batch runs as usual.
    assert summary(together(batched, plain)) == summary(expected)
    assert batched.batch_sizes == {4: 2}
    batched.close()


# -- errors -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raised", "expected", "message"),
    [
        (RuntimeError("boom"), PermanentModelError, "generation failed .*RuntimeError: boom"),
        (torch.cuda.OutOfMemoryError("no room"), TransientModelError, "out of GPU memory.*no room"),
    ],
)
def test_an_error_in_a_batch_fails_every_request_in_it(tiny_causal_path, monkeypatch, raised, expected, message):
    batched = backend(tiny_causal_path, max_batch_size=3, batch_wait_ms=2000)
    batched.retry_policy = RetryPolicy(max_attempts=1)  # one batch: Backend.stream would retry the OOM (test_retry)

    def generate(**kwargs):
        raise raised

    monkeypatch.setattr(batched.model, "generate", generate)

    results = together(batched, [ask(prompt) for prompt in PROMPTS[:3]])

    assert batched.batch_sizes == {3: 1}
    assert all(isinstance(result, expected) for result in results), results
    assert all(result is results[0] or str(result) == str(results[0]) for result in results)
    with pytest.raises(expected, match=message):
        raise results[0]
    batched.close()


def test_images_on_a_text_only_model_are_refused_before_batching(tiny_causal_path, png_bytes):
    batched = backend(tiny_causal_path, max_batch_size=4)

    with pytest.raises(PermanentModelError, match="text-only.*1 image"):
        batched.stream(ask("What is shown?", png_bytes)).collect()

    assert batched.batch_sizes == {}
    batched.close()


# -- (d) settings ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max_batch_size": 0}, 'setting "max_batch_size" must be an integer >= 1, got 0'),
        ({"max_batch_size": "x"}, "setting \"max_batch_size\" must be an integer >= 1, got 'x'"),
        ({"max_batch_size": 2.5}, 'setting "max_batch_size" must be an integer >= 1, got 2.5'),
        ({"max_batch_size": True}, 'setting "max_batch_size" must be an integer >= 1, got True'),
        ({"batch_wait_ms": -1}, 'setting "batch_wait_ms" must be a number >= 0, got -1'),
        ({"batch_wait_ms": "5"}, "setting \"batch_wait_ms\" must be a number >= 0, got '5'"),
        ({"batch_wait_ms": float("inf")}, 'setting "batch_wait_ms" must be a number >= 0, got inf'),
    ],
)
def test_bad_batch_settings(tiny_causal_path, settings, message):
    with pytest.raises(PermanentModelError) as caught:
        backend(tiny_causal_path, **settings)

    assert message in str(caught.value)


def test_batch_settings_have_defaults(tiny_causal_path):
    default = backend(tiny_causal_path)
    tuned = backend(tiny_causal_path, max_batch_size=2, batch_wait_ms=0.5)

    assert (default.max_batch_size, default.batch_wait_ms) == (8, 5)
    assert (tuned.max_batch_size, tuned.batch_wait_ms) == (2, 0.5)
    default.close()
    tuned.close()


# -- (e) close ----------------------------------------------------------------------------------------------


def test_close_while_idle_and_after_use(tiny_causal_path):
    idle = backend(tiny_causal_path)
    idle.close()
    assert idle.model is None and idle._scheduler._thread is None
    with pytest.raises(PermanentModelError, match="was closed"):
        idle.stream(ask("Hello?")).collect()

    used = backend(tiny_causal_path)
    assert used.stream(ask("Hello?", max_new_tokens=4)).collect().completion_tokens >= 1
    thread = used._scheduler._thread
    assert thread.is_alive()
    used.close()
    assert not thread.is_alive() and used.model is None and used.tokenizer is None
    with pytest.raises(PermanentModelError, match="was closed"):
        used.stream(ask("Hello?")).collect()
    used.close()  # twice is fine


# -- the scheduler and the streamer on their own -------------------------------------------------------------


def _scheduler(run_batch, **options) -> BatchScheduler:
    return BatchScheduler(run_batch, lambda exc: PermanentModelError(f"mapped: {exc}"), **options)


def test_scheduler_groups_by_key_oldest_first_up_to_the_limit():
    ran: list[list[str]] = []

    def run_batch(jobs):
        ran.append([job.payload for job in jobs])
        for job in jobs:
            job.end()

    scheduler = _scheduler(run_batch, max_batch_size=2, wait_seconds=0.3)
    jobs = [BatchJob(name, key=name[0]) for name in ("a1", "b1", "a2", "a3", "a4", "b2")]
    for job in jobs:
        assert scheduler.submit(job)
    for job in jobs:
        assert job.ended.wait(5) and job.error is None

    assert ran == [["a1", "a2"], ["b1", "b2"], ["a3", "a4"]]
    assert scheduler.batch_sizes == {2: 3}
    scheduler.close(PermanentModelError("closed"))


def recording(ran: list[list]):
    def run_batch(jobs):
        ran.append([job.payload for job in jobs])
        for job in jobs:
            job.end()

    return run_batch


def submit_every(scheduler: BatchScheduler, seconds: float, count: int) -> list[BatchJob]:
    jobs = [BatchJob(index, "k") for index in range(count)]
    for job in jobs:
        scheduler.submit(job)
        time.sleep(seconds)
    for job in jobs:
        assert job.ended.wait(5)
    return jobs


def test_a_burst_of_requests_a_few_milliseconds_apart_runs_as_one_batch():
    """Callers encode their prompts before queueing them: a burst arrives spread over more than one wait."""
    ran: list[list] = []
    scheduler = _scheduler(recording(ran), max_batch_size=100, wait_seconds=0.2)

    submit_every(scheduler, 0.05, 6)  # 0.3 s in all, 0.05 s apart

    assert ran == [[0, 1, 2, 3, 4, 5]]
    scheduler.close(PermanentModelError("closed"))


def test_a_batch_waits_for_requests_still_being_prepared_with_its_key():
    """A caller encoding a large image takes longer than the wait: the batch waits for it (not for other keys)."""
    ran: list[list] = []
    scheduler = _scheduler(recording(ran), max_batch_size=10, wait_seconds=0.05)
    first, late, other = BatchJob("first", "k"), BatchJob("late", "k"), BatchJob("other", "x")

    with scheduler.arriving("x"):  # never holds a batch of "k"
        with scheduler.arriving("k"):
            scheduler.submit(first)
            time.sleep(0.2)  # four waits
            scheduler.submit(late)
        assert late.ended.wait(5)
        scheduler.submit(other)
    assert other.ended.wait(5)

    assert ran == [["first", "late"], ["other"]]
    scheduler.close(PermanentModelError("closed"))


def test_a_batch_stops_gathering_after_eight_waits_when_requests_never_stop_coming():
    ran: list[list] = []
    scheduler = _scheduler(recording(ran), max_batch_size=1000, wait_seconds=0.1)

    submit_every(scheduler, 0.02, 100)  # 2 s of requests 0.02 s apart

    assert BatchScheduler.GATHER_WAITS == 8 and len(ran) >= 2
    assert 20 <= len(ran[0]) <= 60, ran  # 0.8 s of them
    assert [payload for batch in ran for payload in batch] == list(range(100))
    scheduler.close(PermanentModelError("closed"))


def test_scheduler_skips_cancelled_jobs_and_fails_the_queue_on_close():
    release = threading.Event()
    ran: list[str] = []

    def run_batch(jobs):
        ran.extend(job.payload for job in jobs)
        release.wait(10)
        for job in jobs:
            job.put_text(f"done {job.payload}")
            job.end()

    scheduler = _scheduler(run_batch, max_batch_size=1, wait_seconds=0)
    running, cancelled, queued = BatchJob("running", "k"), BatchJob("cancelled", "k"), BatchJob("queued", "k")
    scheduler.submit(running)
    while not ran:
        time.sleep(0.01)
    scheduler.submit(cancelled)
    scheduler.submit(queued)
    cancelled.cancel()
    closing = threading.Thread(target=scheduler.close, args=(PermanentModelError("model closed"),))
    closing.start()

    assert queued.ended.wait(5) and str(queued.error) == "model closed"
    assert cancelled.ended.is_set() and cancelled.error is None
    assert closing.is_alive()  # close waits for the running batch
    release.set()
    closing.join(5)
    assert list(running.texts()) == ["done running"] and running.error is None
    assert ran == ["running"] and not scheduler.submit(BatchJob("late", "k"))


def test_scheduler_maps_a_batch_error_onto_every_job():
    def run_batch(jobs):
        jobs[0].end()  # finished before the failure: keeps its result
        raise ValueError("broken batch")

    scheduler = _scheduler(run_batch, max_batch_size=3, wait_seconds=1)
    jobs = [BatchJob(index, "k") for index in range(3)]
    for job in jobs:
        scheduler.submit(job)
    for job in jobs:
        assert job.ended.wait(5)

    assert jobs[0].error is None
    assert [str(job.error) for job in jobs[1:]] == ["mapped: broken batch"] * 2
    scheduler.close(PermanentModelError("closed"))


def test_row_streamer_decodes_each_row_like_a_single_stream(causal_one_at_a_time):
    tokenizer = causal_one_at_a_time.tokenizer
    texts = ["caf\u00e9 \u2615 na\u00efve\nsecond line \u4e2d\u6587 ok", "The answer is B. Thanks"]
    ids = [tokenizer.encode(text, add_special_tokens=False) for text in texts]
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    rows = [ids[0], ids[1][:5] + [eos]]  # the second row ends early at EOS
    width = max(map(len, rows))
    jobs = [BatchJob(None, "k") for _ in rows]
    streamer = RowStreamer(tokenizer, jobs, [eos])

    streamer.put(torch.zeros((2, 3), dtype=torch.long))  # the prompt: skipped
    for step in range(width):
        streamer.put(torch.tensor([row[step] if step < len(row) else pad for row in rows]))
        if step == len(rows[1]) - 1:
            assert jobs[1].ended.is_set()
    streamer.end()

    chunks = [list(job.texts()) for job in jobs]
    assert "".join(chunks[0]) == texts[0]
    assert "".join(chunks[1]) == tokenizer.decode(ids[1][:5])
    assert not any("\ufffd" in chunk for chunk in chunks[0])  # split multi-byte characters are held back
    assert len(chunks[0]) > 3  # streamed, not all at the end
    assert [job.completion_tokens for job in jobs] == [len(rows[0]), 6]  # EOS counted, padding not
