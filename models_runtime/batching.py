"""Dynamic batching for a model held in one process: many callers' requests, one ``generate()`` at a time.

Kept apart from ``backends/transformers.py`` because none of it depends on the checkpoint: that backend says
how to turn a list of requests into one padded batch and run it; this module queues the callers' requests,
groups those that can share a batch, and hands each row of the batch its own text as it is generated.

- ``BatchJob``: one caller's request, from the moment it is queued until its row of a batch ends.
- ``BatchScheduler``: one thread that owns the model; it takes the oldest request, waits a few milliseconds for
  more with the same key (the same generation settings), and runs them together.
- ``RowStreamer`` / ``RowsCancelled``: what ``generate()`` is given so each row streams to its own caller and a
  caller that leaves (or has seen a stop string) stops only its own row.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import torch
from transformers import PreTrainedTokenizerBase, StoppingCriteria, TextStreamer
from transformers.generation.streamers import BaseStreamer

Payload = TypeVar("Payload")


class BatchJob(Generic[Payload]):
    """One request: the caller reads ``texts()``; the scheduler thread writes text, counts and the error.

    ``payload`` is whatever the backend needs to build its row; ``key`` says which jobs may share a batch.
    """

    def __init__(self, payload: Payload, key: Hashable):
        self.payload = payload
        self.key = key
        self.cancelled = threading.Event()  # set by the caller: stop this row at the next token
        self.ended = threading.Event()  # set by the scheduler thread: no more text will come
        self.error: BaseException | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens = 0
        self._chunks: queue.SimpleQueue[str | None] = queue.SimpleQueue()  # None: the last item

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

    After the first job of a batch arrives it waits up to ``wait_seconds`` for more with the same key; jobs with
    another key wait their turn (oldest first). ``run_batch`` must end each job it finishes; any job it leaves
    unended is ended here, with ``error_for(exception)`` when it raised. The thread starts with the first job.
    """

    def __init__(
        self,
        run_batch: Callable[[list[BatchJob[Payload]]], None],
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
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._close_error: BaseException | None = None

    @property
    def batch_sizes(self) -> dict[int, int]:
        """Batch size -> how many batches of that size ran."""
        with self._cond:
            return dict(self._batch_sizes)

    def submit(self, job: BatchJob[Payload]) -> bool:
        """Queue the job; False once the scheduler is closed."""
        with self._cond:
            if self._closed:
                return False
            self._pending.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()
            self._cond.notify()
        return True

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
                error = None
                try:
                    self._run_batch(batch)
                except Exception as exc:
                    error = self._error_for(exc)
                finally:
                    for job in batch:
                        job.end(error or RuntimeError("the batch ended without finishing this request"))
        finally:  # also if this thread dies of something unexpected: nobody may wait forever
            with self._cond:
                leftovers = self._close_queue()
            for job in leftovers:
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
                key = self._pending[0].key
                deadline = time.monotonic() + self.wait_seconds
                while True:
                    same = [job for job in self._pending if job.key == key and not job.cancelled.is_set()]
                    remaining = deadline - time.monotonic()
                    if len(same) >= self.max_batch_size or remaining <= 0 or self._closed:
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


class RowsCancelled(StoppingCriteria):
    """Stops the rows whose caller is gone or has seen a stop string; ``generate`` keeps the others going."""

    def __init__(self, jobs: Sequence[BatchJob[Any]]):
        self.jobs = jobs

    def __call__(self, input_ids: torch.Tensor, scores: object, **kwargs: Any) -> torch.Tensor:
        done = [job.cancelled.is_set() or job.ended.is_set() for job in self.jobs]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


class RowStreamer(BaseStreamer):
    """Routes each row of a batched ``generate()`` to its own job, as text that will not change any more.

    The first ``put`` is the (padded) prompt and is skipped. Then each ``put`` holds one new token per row.
    A row ends at its first end-of-sequence token (counted, not shown), or when its caller cancels; later
    tokens of that row (padding) are ignored. ``end`` flushes and ends the rows still running.
    """

    def __init__(
        self, tokenizer: PreTrainedTokenizerBase, jobs: Sequence[BatchJob[Any]], eos_token_ids: Iterable[int]
    ):
        self.jobs = jobs
        self.rows: list[TextStreamer] = [_RowText(tokenizer, job) for job in jobs]
        self.eos_token_ids = frozenset(eos_token_ids)
        self._prompt_seen = False

    def put(self, value: torch.Tensor) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        column = value.reshape(-1, 1)
        for job, row, token, one in zip(self.jobs, self.rows, column.view(-1).tolist(), column.unbind(), strict=True):
            if job.ended.is_set():
                continue
            job.completion_tokens += 1
            if job.cancelled.is_set():
                job.end()  # nobody reads this row any more
            elif token in self.eos_token_ids:
                row.end()
                job.end()
            else:
                row.put(one)

    def end(self) -> None:
        for job, row in zip(self.jobs, self.rows, strict=True):
            if not job.ended.is_set():
                row.end()
                job.end()


class _RowText(TextStreamer):
    """One row's incremental decoding: transformers' own ``TextStreamer`` (text released at spaces, newlines and
    CJK characters, so a word is never shown half-decoded), handing its text to the row's job instead of
    printing it."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, job: BatchJob[Any]):
        super().__init__(tokenizer, skip_special_tokens=True)
        self.job = job

    def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
        self.job.put_text(text)
