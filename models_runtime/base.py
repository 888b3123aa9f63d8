"""The one interface every backend implements: ``backend.stream(request)`` yields text chunks,
then ``stream.result`` holds the final text, token counts and timings."""

from __future__ import annotations

import io
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from models_runtime.retry import GiveUp, RetryPolicy

if TYPE_CHECKING:  # Pillow is imported only when an image is decoded
    from PIL import Image

# A backend's settings as stored with a model configuration: JSON values by name.
BackendSettings = Mapping[str, Any]


class ModelError(Exception):
    """Base of the errors a backend may raise. Every one ends a round as a model error (with Retry)."""


class TransientModelError(ModelError):
    """Worth retrying: timeouts, 429, 5xx, connection errors, a busy GPU.

    ``retry_after``: seconds the server asked to wait (its ``Retry-After``), when it said.
    ``unreached``: the request never reached a server (connection refused, no route, connect timeout): nothing was
    generated or billed, so it is tried again until the retry budget is spent, not only ``max_attempts`` times: a
    server restarting refuses connections for a few seconds.
    """

    def __init__(self, message: str, *, retry_after: float | None = None, unreached: bool = False):
        super().__init__(message)
        self.retry_after = retry_after
        self.unreached = unreached


class PermanentModelError(ModelError):
    """Retrying will not help: bad model name, bad key, missing checkpoint, unsupported input."""


class EmptyAnswerError(ModelError):
    """The model's stream ended without any text: a model error, never an answer to verify."""


class StreamBrokenError(ModelError):
    """The model failed after it had started answering. Not retried (the text was already shown);
    ``partial_text`` is what arrived before the failure, kept for the researcher, never an answer."""

    def __init__(self, message: str, *, partial_text: str = ""):  # a default: exceptions unpickle from args
        super().__init__(message)
        self.partial_text = partial_text


@dataclass(frozen=True)
class ImagePart:
    """An image in a chat message, as encoded bytes (PNG/JPEG) or a PIL image."""

    data: bytes | bytearray | Image.Image

    def to_pil(self) -> Image.Image:
        from PIL import Image

        if isinstance(self.data, bytes | bytearray):
            return Image.open(io.BytesIO(self.data)).convert("RGB")
        return self.data.convert("RGB")

    def to_png_bytes(self) -> bytes:
        if isinstance(self.data, bytes | bytearray):
            return bytes(self.data)
        buf = io.BytesIO()
        self.data.save(buf, format="PNG")
        return buf.getvalue()


@dataclass(frozen=True)
class Message:
    """One chat turn. ``content`` is a list of ``str`` (text) and ``ImagePart`` items, in order."""

    role: str  # "system" | "user" | "assistant"
    content: tuple[str | ImagePart, ...]

    @classmethod
    def text(cls, role: str, text: str) -> Message:
        return cls(role=role, content=(text,))

    @property
    def text_content(self) -> str:
        return "\n".join(part for part in self.content if isinstance(part, str))

    @property
    def images(self) -> list[ImagePart]:
        return [part for part in self.content if isinstance(part, ImagePart)]


@dataclass(frozen=True)
class GenerationSettings:
    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> GenerationSettings:
        values = dict(data or {})
        unknown = set(values) - {"max_new_tokens", "temperature", "top_p", "seed", "stop"}
        if unknown:
            raise PermanentModelError(f"unknown generation setting(s): {', '.join(sorted(unknown))}")
        if "stop" in values:
            values["stop"] = tuple(values["stop"] or ())
        return cls(**values)


@dataclass(frozen=True)
class TaskContext:
    """What the offline backends (``simulated``, ``replay``) may know about the task.

    Real backends ignore it. ``ground_truth`` is here only so the simulated student can play its part;
    it is never put into a prompt by the runtime.
    """

    task_id: str = ""
    round_index: int = 0
    answer_type: str = "text"
    options: tuple[str, ...] = ()
    ground_truth: str = ""
    recorded_answers: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelRequest:
    messages: tuple[Message, ...]
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    context: TaskContext = field(default_factory=TaskContext)


@dataclass
class ModelResult:
    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    time_to_first_token: float | None = None  # seconds from the call to the first chunk
    latency: float = 0.0  # seconds from the call to the last chunk
    # Seconds from the call to the model's first generated token, where the backend sees tokens (a local
    # checkpoint): its text may come later, as text is released a whole word at a time.
    time_to_first_model_token: float | None = None


class Stream:
    """Iterate for text chunks; once exhausted, ``result`` holds the final ModelResult.

    Backends yield chunks from ``_chunks`` and may set the token counts on the stream, and ``first_token_at``
    (``time.perf_counter()`` at the model's first token) where they see tokens.
    A stream that ends with no text (or only whitespace) raises EmptyAnswerError instead of giving a result.
    """

    def __init__(self, chunks: Iterator[str]):
        self._chunks = chunks
        self._started = time.perf_counter()
        self._parts: list[str] = []
        self._first: float | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.first_token_at: float | None = None
        self.result: ModelResult | None = None

    def __iter__(self) -> Iterator[str]:
        try:
            for chunk in self._chunks:
                if not chunk:
                    continue
                if self._first is None:
                    self._first = time.perf_counter() - self._started
                self._parts.append(chunk)
                yield chunk
        finally:
            # Also when the caller stops early (break, exception, time limit): the backend stops at once.
            self.close()
        text = "".join(self._parts)
        if not text.strip():
            raise EmptyAnswerError(
                f"the model's answer was empty: its stream ended {'with only whitespace' if text else 'without text'}"
                "; an empty answer is a model error, never an answer to verify"
            )
        self.result = ModelResult(
            text=text,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            time_to_first_token=self._first,
            latency=time.perf_counter() - self._started,
            time_to_first_model_token=None if self.first_token_at is None else self.first_token_at - self._started,
        )

    def close(self) -> None:
        """Stop early: the backend stops generating or drops its connection. ``result`` stays None."""
        _close(self._chunks)

    def collect(self) -> ModelResult:
        """Drain the stream and return the final result."""
        for _ in self:
            pass
        assert self.result is not None
        return self.result


class Backend(ABC):
    """A model behind the streaming interface. One instance per (backend, settings); reused across calls.

    ``retry_policy`` is the only retry layer for model calls (models_runtime.retry): a TransientModelError raised
    before the first chunk is tried again within it; any model error after the first chunk ends the call as a
    StreamBrokenError that keeps the text received.
    """

    name: str = ""
    retry_policy: RetryPolicy = RetryPolicy()

    def __init__(self, settings: BackendSettings | None = None):
        self.settings: dict[str, Any] = dict(settings or {})

    def stream(self, request: ModelRequest) -> Stream:
        stream = Stream(iter(()))
        stream._chunks = self._chunks_with_retries(request, stream)
        return stream

    def _chunks_with_retries(self, request: ModelRequest, stream: Stream) -> Iterator[str]:
        policy = self.retry_policy
        began = time.monotonic()
        attempts = 0
        while True:
            attempts += 1
            received: list[str] = []
            chunks = self._chunks(request, stream)
            try:
                for chunk in chunks:
                    received.append(chunk)
                    yield chunk
                return
            except ModelError as error:
                partial = "".join(received)
                if partial:  # retrying would repeat text the caller has already shown
                    raise StreamBrokenError(
                        f"the answer broke off after {len(partial)} characters: {error}", partial_text=partial
                    ) from error
                if not isinstance(error, TransientModelError):
                    raise
                wait = policy.next_wait(attempts, time.monotonic() - began, error.retry_after,
                                        unreached=error.unreached)
                if isinstance(wait, GiveUp):
                    raise TransientModelError(f"{wait.reason}: {error}", retry_after=error.retry_after,
                                              unreached=error.unreached) from error
                time.sleep(wait)
            finally:
                _close(chunks)  # a caller that stops early stops this attempt's request at once

    @abstractmethod
    def _chunks(self, request: ModelRequest, stream: Stream) -> Iterator[str]:
        """Yield text chunks; set ``stream.prompt_tokens`` / ``stream.completion_tokens`` when known.

        One attempt: raise TransientModelError (with ``retry_after`` when the server gave one) for what is worth
        another attempt, and leave the retrying to ``stream``."""

    def close(self) -> None:  # noqa: B027 - optional hook: most backends hold nothing to release
        """Release memory (GPU, connections). Called when a config changes or the worker stops."""


def _close(chunks: Iterator[str]) -> None:
    close = getattr(chunks, "close", None)
    if close is not None:
        close()
