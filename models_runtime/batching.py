"""Dynamic batching for a model held in one process: many callers' requests, one ``generate()`` at a time.

Kept apart from ``backends/transformers.py`` because none of it depends on the checkpoint: that backend says
how to turn a list of requests into one padded batch and run it; this module queues the callers' requests,
groups those that can share a batch, and hands each row of the batch its own text as it is generated.

- ``BatchJob``: one caller's request, from the moment it is queued until its row of a batch ends.
- ``BatchScheduler``: one thread per model; it takes the oldest request, waits for more with the same key (the
  same generation settings) while they keep coming a few milliseconds apart, and runs them together.
- ``RowStreamer`` / ``RowsDone``: what ``generate()`` is given so each row streams to its own caller and a
  caller that leaves (or has seen a stop string) stops only its own row.

A batch may end before its rows have (a slice): when requests with its key wait, there is room for them and
letting them in pays (``slice_pays``), ``RowsDone`` ends the batch after at least ``slice_tokens`` tokens, the
backend hands back the rows that go on, and the scheduler runs them again at once together with the newcomers
(their prompts plus what they generated so far). A request that arrives while a long batch runs so waits for one
slice, not for the whole batch.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import unicodedata
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import torch
from tokenizers.decoders import DecodeStream
from transformers import PreTrainedTokenizerBase, StoppingCriteria, TextStreamer
from transformers.generation.streamers import BaseStreamer

Payload = TypeVar("Payload")


class BatchJob(Generic[Payload]):
    """One request: the caller reads ``texts()``; the scheduler thread writes text, counts and the error.

    ``payload`` is whatever the backend needs to build its row; ``key`` says which jobs may share a batch.
    """

    def __init__(self, payload: Payload, key: Hashable, *, max_new_tokens: int | None = None):
        self.payload = payload
        self.key = key
        self.max_new_tokens = max_new_tokens  # the row ends after this many tokens (None: when its batch ends)
        self.cancelled = threading.Event()  # set by the caller: stop this row at the next token
        self.ended = threading.Event()  # set by the scheduler thread: no more text will come
        self.error: BaseException | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens = 0
        self.queued_at = 0.0  # time.monotonic() when submitted
        self.first_token_at: float | None = None  # time.perf_counter() at the row's first generated token
        # Kept from one slice to the next, by the scheduler thread: how many batches this job was in, the tokens
        # generated so far and the row's incremental decoder.
        self.slices = 0
        self.generated: list[int] = []
        self.text: RowText | _SlowRowText | None = None
        self._chunks: queue.SimpleQueue[str | None] = queue.SimpleQueue()  # None: the last item

    @property
    def goes_on(self) -> bool:
        """Not ended, its caller still reading, and tokens left to generate: it continues in another batch."""
        if self.ended.is_set() or self.cancelled.is_set():
            return False
        return self.max_new_tokens is not None and self.completion_tokens < self.max_new_tokens

    def cancel(self) -> None:
        self.cancelled.set()

    def put_text(self, text: str) -> None:
        if text:
            self._chunks.put(text)

    def end(self, error: BaseException | None = None) -> None:
        """Called once per job, by the scheduler thread (or by ``close`` for jobs that never ran)."""
        if self.ended.is_set():
            return
        # A caller that already stopped reading (stop string, walked away) has what it wanted: no error for it.
        if error is not None and not self.cancelled.is_set():
            self.error = error
        self.ended.set()
        self._chunks.put(None)

    def texts(self) -> Iterator[str]:
        while (item := self._chunks.get()) is not None:
            yield item


class BatchScheduler(Generic[Payload]):
    """Runs ``run_batch(jobs)`` on one thread of its own, with up to ``max_batch_size`` jobs sharing a key.

    A batch gathers jobs with the first one's key until none has come for ``wait_seconds`` and none is on its way
    (``arriving``: a caller preparing its request), at most ``GATHER_WAITS`` times ``wait_seconds`` after the first
    arrived, or until it is full: a burst of requests makes one batch, and a request alone waits
    ``wait_seconds``. Jobs with another key wait
    their turn (oldest first). ``run_batch`` must end each job it finishes and returns those that go on (a batch
    that ended its slice early): they come first in the next batch of their key, which starts at once. Any other
    job it leaves unended is ended here, with ``error_for(exception)`` when it raised. The thread starts with the
    first job.
    """

    GATHER_WAITS = 8

    def __init__(
        self,
        run_batch: Callable[[list[BatchJob[Payload]]], Sequence[BatchJob[Payload]]],
        error_for: Callable[[Exception], BaseException],
        *,
        max_batch_size: int,
        wait_seconds: float,
        name: str = "batch-scheduler",
    ):
        self._run_batch = run_batch
        self._error_for = error_for
        self.max_batch_size = max_batch_size
        self.wait_seconds = wait_seconds
        self.name = name
        self._batch_sizes: Counter[int] = Counter()
        self._pending: deque[BatchJob[Payload]] = deque()
        self._arriving: Counter[Hashable] = Counter()  # key -> callers preparing a job with it
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._close_error: BaseException | None = None

    @property
    def batch_sizes(self) -> dict[int, int]:
        """Batch size -> how many batches (slices) of that size ran."""
        with self._cond:
            return dict(self._batch_sizes)

    @contextlib.contextmanager
    def arriving(self, key: Hashable) -> Iterator[None]:
        """Around preparing a job with ``key`` (encoding its prompt and images) before submitting it: a batch of
        that key being gathered waits for it, up to its limit."""
        with self._cond:
            self._arriving[key] += 1
        try:
            yield
        finally:
            with self._cond:
                self._arriving[key] -= 1
                if not self._arriving[key]:
                    del self._arriving[key]
                self._cond.notify_all()

    def submit(self, job: BatchJob[Payload]) -> bool:
        """Queue the job; False once the scheduler is closed."""
        with self._cond:
            if self._closed:
                return False
            job.queued_at = time.monotonic()
            self._pending.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()
            self._cond.notify()
        return True

    def newcomers(self, jobs: Sequence[BatchJob[Payload]]) -> int:
        """How many waiting requests could join a running batch if it ended its slice now: those with its key
        that have not started yet, as many as the next batch has room for beside the rows that go on."""
        room = self.max_batch_size - sum(not (job.ended.is_set() or job.cancelled.is_set()) for job in jobs)
        if room <= 0:
            return 0
        key = jobs[0].key
        with self._cond:
            waiting = sum(job.key == key and not job.slices and not job.cancelled.is_set() for job in self._pending)
        return min(waiting, room)

    def close(self, error: BaseException) -> None:
        """Fail the queued jobs with ``error``, let the running batch finish, and stop the thread."""
        with self._cond:
            self._close_error = error
            leftovers = self._close_queue()
            thread = self._thread
            self._cond.notify_all()
        for job in leftovers:
            job.end(error)
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _loop(self) -> None:
        try:
            while (batch := self._next_batch()) is not None:
                with self._cond:
                    self._batch_sizes[len(batch)] += 1
                for job in batch:
                    job.slices += 1
                error = None
                going_on: list[BatchJob[Payload]] = []
                try:
                    going_on = [job for job in self._run_batch(batch) if job.goes_on]
                except Exception as exc:
                    error = self._error_for(exc)
                finally:
                    for job in batch:
                        if job not in going_on:
                            job.end(error or RuntimeError("the batch ended without finishing this request"))
                self._requeue(going_on)
        finally:  # also if this thread dies of something unexpected: nobody may wait forever
            with self._cond:
                leftovers = self._close_queue()
            for job in leftovers:
                job.end(self._close_error or RuntimeError("the batch scheduler stopped"))

    def _requeue(self, jobs: list[BatchJob[Payload]]) -> None:
        """Jobs that go on, in front of the queue in their order (they are older than anything queued)."""
        with self._cond:
            if not self._closed:
                self._pending.extendleft(reversed(jobs))
                return
        for job in jobs:
            job.end(self._close_error or RuntimeError("the batch scheduler stopped"))

    def _close_queue(self) -> list[BatchJob[Payload]]:
        """Under the lock: take no more jobs and hand back those still queued (the caller ends them)."""
        self._closed = True
        leftovers = list(self._pending)
        self._pending.clear()
        return leftovers

    def _next_batch(self) -> list[BatchJob[Payload]] | None:
        with self._cond:
            while True:
                self._drop_cancelled()
                if self._closed:
                    return None
                if not self._pending:
                    self._cond.wait()
                    continue
                first = self._pending[0]
                while True:
                    same = [job for job in self._pending if job.key == first.key and not job.cancelled.is_set()]
                    # Rows that go on start at once: whoever made them stop is already waiting.
                    if first.slices or len(same) >= self.max_batch_size or self._closed:
                        break
                    deadline = first.queued_at + self.GATHER_WAITS * self.wait_seconds
                    if not self._arriving[first.key]:
                        latest = max((job.queued_at for job in same), default=first.queued_at)
                        deadline = min(deadline, latest + self.wait_seconds)
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
                if self._closed:
                    return None
                batch = same[: self.max_batch_size]
                if batch:  # empty when the first job was cancelled meanwhile: start over
                    for job in batch:
                        self._pending.remove(job)
                    return batch

    def _drop_cancelled(self) -> None:
        """Callers that left before their request ran: end those jobs without running them."""
        for job in [job for job in self._pending if job.cancelled.is_set()]:
            self._pending.remove(job)
            job.end()


def slice_pays(*, waiting: int, running: int, steps_left: int, step_seconds: float, switch_seconds: float) -> bool:
    """Whether ending a batch's slice now, to let ``waiting`` requests in, saves more waiting than it costs.

    A waiting request waits for a batch to be built and prefilled either way (``switch_seconds``); not ending the
    slice, it also waits for the rest of the batch (``steps_left`` decode steps).
    Ending it, each ``running`` row waits for that switch too, which it would not have. Few newcomers beside many
    rows near their end are better off waiting; many newcomers, or a long batch ahead, are not.
    """
    return waiting * steps_left * step_seconds > running * switch_seconds


@dataclass(frozen=True)
class SliceTiming:
    """How one batch (slice) ran: from building it to its first token, and per decode step after that."""

    rows: int
    switch_seconds: float  # building the batch, prefill and the first token
    steps: int  # decode steps after the first token
    step_seconds: float  # their mean (0 when there were none)


class RowsDone(StoppingCriteria):
    """Stops the rows whose caller is gone or has seen a stop string; ``generate`` keeps the others going.

    Rows past the jobs (``rows`` > len(jobs): filler up to a compiled batch size) are done from the start. After
    at least ``slice_tokens`` tokens (0: never), when ``newcomers()`` requests wait and ``slice_pays``, every row
    stops at once: the batch ends its slice and its unfinished rows go on in the next batch. It times the batch
    from ``started`` (``time.perf_counter()`` when the backend began building it): ``timing()``.
    """

    def __init__(
        self,
        jobs: Sequence[BatchJob[Any]],
        rows: int | None = None,
        *,
        max_new_tokens: int | None = None,
        newcomers: Callable[[], int] | None = None,
        slice_tokens: int = 0,
        started: float | None = None,
    ):
        self.jobs = jobs
        self.fillers = (rows or len(jobs)) - len(jobs)
        self.max_new_tokens = max_new_tokens  # this batch's limit (generate's max_new_tokens)
        self.newcomers = newcomers
        self.slice_tokens = slice_tokens
        self.started = time.perf_counter() if started is None else started
        self.tokens = 0
        self._first_token_at = 0.0
        self._last_token_at = 0.0
        self._done: list[bool] = []
        self._done_tensor: torch.Tensor | None = None

    def __call__(self, input_ids: torch.Tensor, scores: object, **kwargs: Any) -> torch.Tensor:
        self.tokens += 1
        self._last_token_at = time.perf_counter()
        if self.tokens == 1:
            self._first_token_at = self._last_token_at
        done = [job.cancelled.is_set() or job.ended.is_set() for job in self.jobs] + [True] * self.fillers
        if self._should_end_slice(done):
            done = [True] * len(done)
        if done != self._done or self._done_tensor is None:
            # A new tensor only when a row changed: copying to the GPU at every step would wait for the step.
            self._done, self._done_tensor = done, torch.tensor(done, dtype=torch.bool, device=input_ids.device)
        return self._done_tensor

    def timing(self) -> SliceTiming:
        steps = max(self.tokens - 1, 0)
        step = (self._last_token_at - self._first_token_at) / steps if steps else 0.0
        return SliceTiming(len(self.jobs), max(self._first_token_at - self.started, 0.0), steps, step)

    def _should_end_slice(self, done: list[bool]) -> bool:
        # At least two tokens: the time of a decode step is known from the second one on.
        if self.newcomers is None or not self.slice_tokens or self.tokens < max(self.slice_tokens, 2) or all(done):
            return False
        waiting = self.newcomers()
        if not waiting:
            return False
        running = [job for job in self.jobs if not (job.cancelled.is_set() or job.ended.is_set())]
        batch_left = (self.max_new_tokens or self.tokens) - self.tokens
        steps_left = max(
            (min(job.max_new_tokens - job.completion_tokens, batch_left) if job.max_new_tokens is not None
             else batch_left) for job in running
        )
        timing = self.timing()
        # The next batch's switch, from this one's: prefilling more rows takes longer (on a CPU, in proportion).
        switch = timing.switch_seconds * (len(running) + waiting) / len(self.jobs)
        return slice_pays(
            waiting=waiting,
            running=len(running),
            steps_left=steps_left,
            step_seconds=timing.step_seconds,
            switch_seconds=switch,
        )


class RowStreamer(BaseStreamer):
    """Routes each row of a batched ``generate()`` to its own job, as text that will not change any more.

    The first ``put`` is the (padded) prompt and is skipped. Then each ``put`` holds one new token per row (and
    per filler row past the jobs, ignored). A row ends at its first end-of-sequence token (counted, not shown),
    when its caller cancels, or at its ``max_new_tokens``; later tokens of that row (padding) are ignored.
    ``end`` ends the rows still running, except those that go on in another batch: their text is kept back
    until the word it is in is complete, as within a batch.
    """

    def __init__(
        self, tokenizer: PreTrainedTokenizerBase, jobs: Sequence[BatchJob[Any]], eos_token_ids: Iterable[int]
    ):
        self.jobs = jobs
        for job in jobs:
            if job.text is None:
                job.text = _row_text(tokenizer, job)
        self.eos_token_ids = frozenset(eos_token_ids)
        self._prompt_seen = False

    def put(self, value: torch.Tensor) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        for job, token in zip(self.jobs, value.reshape(-1).tolist()[: len(self.jobs)], strict=True):
            if job.ended.is_set():
                continue
            job.completion_tokens += 1
            if job.first_token_at is None:
                job.first_token_at = time.perf_counter()
            if job.cancelled.is_set():
                job.end()  # nobody reads this row any more
            elif token in self.eos_token_ids:
                self._end(job)
            else:
                job.generated.append(token)
                assert job.text is not None  # set in __init__
                job.text.put(token)
                if job.max_new_tokens is not None and job.completion_tokens >= job.max_new_tokens:
                    self._end(job)

    def end(self) -> None:
        for job in self.jobs:
            if not job.ended.is_set() and not job.goes_on:
                self._end(job)

    @staticmethod
    def _end(job: BatchJob[Any]) -> None:
        if job.text is not None:
            job.text.end()
        job.end()


class RowText:
    """One row's incremental decoding, token by token: tokenizers' own ``DecodeStream`` (which holds back a
    character split over tokens), with its text released at spaces, newlines and CJK characters (as transformers'
    ``TextStreamer`` did), so a word is never shown half-decoded."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, job: BatchJob[Any]):
        self.job = job
        self.backend = tokenizer.backend_tokenizer
        self.stream = DecodeStream(skip_special_tokens=True)
        self.held = ""

    def put(self, token: int) -> None:
        piece = self.stream.step(self.backend, token)
        if not piece:
            return
        self.held += piece
        if self.held.endswith("\n") or _is_wide(self.held[-1]):
            cut = len(self.held)
        else:
            cut = self.held.rfind(" ") + 1
        if cut:
            self.job.put_text(self.held[:cut])
            self.held = self.held[cut:]

    def end(self) -> None:
        self.job.put_text(self.held)
        self.held = ""


class _SlowRowText(TextStreamer):
    """The same for a tokenizer without a fast backend: transformers' ``TextStreamer``, which decodes the row's
    tokens since its last newline at every step, handing its text to the row's job instead of printing it."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, job: BatchJob[Any]):
        super().__init__(tokenizer, skip_special_tokens=True)
        self.job = job

    def put(self, value: Any) -> None:
        super().put(torch.tensor([value]))  # type: ignore[no-untyped-call]  # transformers leaves it untyped

    def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
        self.job.put_text(text)


def _row_text(tokenizer: PreTrainedTokenizerBase, job: BatchJob[Any]) -> RowText | _SlowRowText:
    if getattr(tokenizer, "backend_tokenizer", None) is not None:
        return RowText(tokenizer, job)
    return _SlowRowText(tokenizer, job)


def _is_wide(character: str) -> bool:
    """CJK characters and the like (full width): such text has no spaces to wait for."""
    return unicodedata.east_asian_width(character) in ("W", "F")
