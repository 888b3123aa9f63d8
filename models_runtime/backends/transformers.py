"""A local Hugging Face checkpoint, loaded once per process and kept warm.

Settings:

- ``path`` (required): a local directory written by ``save_pretrained``. Never a hub id: nothing is downloaded.
- ``device``: "auto" (default: cuda when available, else cpu), "cpu" or "cuda" (or "cuda:N").
- ``dtype``: "auto" (default: bfloat16 on cuda, float32 on cpu), "bfloat16", "float16" or "float32".
- ``max_batch_size``: how many concurrent requests may share one ``generate()`` (default 8; 1 = one at a time).
- ``batch_wait_ms``: how long a batch waits for the next request to join it (default 5, 10 with compiled
  decoding); each arrival restarts the wait, and requests still being encoded are waited for, up to 8 times
  this after the first request, so a burst of requests runs as one batch. Callers encode their requests one at
  a time, with Python's threads switching every 5 ms: 10 ms keeps a burst together, and a request that misses
  a compiled batch waits for many fast steps.
- ``batch_slice_tokens``: a running batch may make way for requests that wait with the same settings after this
  many new tokens (default 16; 0: a batch runs to its end first), when letting them in saves more waiting than
  building the batch again costs (``models_runtime/batching.py``). Its unfinished rows go on in the next batch.
- ``compiled_decoding``, ``compile_batch_sizes``, ``compile_cache_lengths``, ``compile_backend``: a static KV
  cache and a compiled decode step, on by default with CUDA (``models_runtime/compiled_decoding.py``).

Image-text-to-text checkpoints load with ``AutoProcessor`` + ``AutoModelForImageTextToText``; anything else
falls back to ``AutoTokenizer`` + ``AutoModelForCausalLM`` and rejects requests with images. One scheduler
thread per model gathers the batches (``models_runtime/batching.py``): concurrent ``stream()`` calls (a Celery
worker with ``-P threads``) encode their prompt and images in their own thread and queue the request; requests
with the same generation settings run as one left-padded batch, each row streaming to its own caller. With
compiled decoding, ``generate()`` itself runs on the process's decode thread (``models_runtime/decode_thread.py``).
Seeded sampling runs alone, so a seed gives the same answer under load. Each prompt is encoded on its own
(``models_runtime/batch_rows.py``); set ``max_batch_size`` to 1 for a checkpoint whose processor output cannot be
batched that way.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Hashable, Iterator, Sequence
from typing import Any, Literal, NamedTuple, Protocol, TypedDict

import torch
from PIL import Image
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForImageTextToText,
    AutoProcessor,
    AutoTokenizer,
    GenerationConfig,
    PreTrainedTokenizerBase,
    ProcessorMixin,
    StoppingCriteriaList,
)
from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

from models_runtime.base import (
    Backend,
    BackendSettings,
    GenerationSettings,
    ImagePart,
    ModelRequest,
    PermanentModelError,
    Stream,
    TransientModelError,
)
from models_runtime.batch_rows import EncodedPrompt, collate
from models_runtime.batching import BatchJob, BatchScheduler, RowsDone, RowStreamer, SliceTiming
from models_runtime.compiled_decoding import (
    COMPILE_KEYS,
    CompiledDecoding,
    CompileSettings,
    Plan,
    Shape,
    WarmUp,
)
from models_runtime.decode_thread import run_on_decode_thread
from models_runtime.devices import resolve_device, resolve_dtype
from models_runtime.first_requests import serve_first_requests
from models_runtime.settings import SettingsReader
from models_runtime.textstream import StopCutter

logger = logging.getLogger(__name__)

SETTINGS_KEYS = {"path", "device", "dtype", "max_batch_size", "batch_wait_ms", "batch_slice_tokens", *COMPILE_KEYS}


class GenerativeModel(Protocol):
    """What this backend uses of a loaded checkpoint (a ``PreTrainedModel`` with ``GenerationMixin``)."""

    generation_config: GenerationConfig

    def generate(self, **kwargs: Any) -> Any: ...

    def parameters(self) -> Iterator[torch.nn.Parameter]: ...


class ImageContent(TypedDict):
    type: Literal["image"]


class TextContent(TypedDict):
    type: Literal["text"]
    text: str


ContentPart = ImageContent | TextContent


class ChatTurn(TypedDict):
    """A message as chat templates take it: plain text for text-only models, a list of parts for processors."""

    role: str
    content: str | list[ContentPart]


class Row(NamedTuple):
    """One request's row of a batch, encoded in the caller's thread."""

    prompt: EncodedPrompt
    settings: GenerationSettings


class TransformersBackend(Backend):
    name = "transformers"

    def __init__(self, settings: BackendSettings | None = None):
        super().__init__(settings)
        unknown = set(self.settings) - SETTINGS_KEYS
        if unknown:
            raise PermanentModelError(
                f"unknown transformers setting(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(SETTINGS_KEYS))}"
            )
        path = self.settings.get("path")
        if not path:
            raise PermanentModelError(
                'transformers backend needs a "path" setting (a local checkpoint directory)'
            )
        self.path = os.path.expanduser(str(path))
        # A missing directory would make from_pretrained treat the path as a hub id: refuse before that.
        if not os.path.isdir(self.path):
            raise PermanentModelError(f"transformers checkpoint directory not found: {self.path}")
        self.device = resolve_device(self.settings.get("device", "auto"))
        self.dtype = resolve_dtype(self.settings.get("dtype", "auto"), self.device)
        self._torch_dtype = getattr(torch, self.dtype)
        reader = SettingsReader("transformers", self.settings)
        self.max_batch_size = reader.integer("max_batch_size", 8, minimum=1)
        self.batch_slice_tokens = reader.integer("batch_slice_tokens", 16, minimum=0)
        compile_settings = CompileSettings.read(reader, device=self.device, max_batch_size=self.max_batch_size)
        self.batch_wait_ms = reader.number("batch_wait_ms", 5 if compile_settings is None else 10, minimum=0)
        self._scheduler = BatchScheduler(
            self._run_batch,
            self._batch_error,
            max_batch_size=self.max_batch_size,
            wait_seconds=self.batch_wait_ms / 1000,
            name=f"transformers-batches:{os.path.basename(self.path.rstrip(os.sep))}",
        )
        self.model: GenerativeModel | None = None
        self.processor: ProcessorMixin | None = None
        self.tokenizer: PreTrainedTokenizerBase | None = None
        self.multimodal = False
        self._eos_token_ids: set[int] = set()
        self.compiled: CompiledDecoding | None = None
        self.compile_failure = ""
        self._encoding = threading.Lock()  # fast tokenizers are not thread-safe: one encoding at a time
        self.slice_timings: deque[SliceTiming] = deque(maxlen=10_000)  # the latest batches' timings (benchmarks)
        self._load()
        if compile_settings is not None:
            self._compile(compile_settings)
        if self.device.startswith("cuda"):
            serve_first_requests(self)
            self.slice_timings.clear()  # the figures of what was served start with the first real request
            if self.compiled is not None:
                self.compiled.batches.clear()

    # -- loading -------------------------------------------------------------------------------------------

    def _load(self) -> None:
        common = {"local_files_only": True}
        try:
            config = AutoConfig.from_pretrained(self.path, **common)
            self.multimodal = config.model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
            # No device_map: that needs `accelerate`, which is not a dependency; move the model after loading.
            model_kwargs = {**common, "dtype": self._torch_dtype}
            if self.multimodal:
                self.processor = AutoProcessor.from_pretrained(self.path, **common)
                tokenizer = getattr(self.processor, "tokenizer", None)
                if not isinstance(tokenizer, PreTrainedTokenizerBase):
                    raise ValueError(f"the processor {type(self.processor).__name__} has no tokenizer")
                model = AutoModelForImageTextToText.from_pretrained(self.path, **model_kwargs)
            else:
                tokenizer = AutoTokenizer.from_pretrained(self.path, **common)
                model = AutoModelForCausalLM.from_pretrained(self.path, **model_kwargs)
            # transformers wraps PreTrainedModel.to with functools.wraps, which typeshed does not bind as a method
            model.to(self.device).eval()  # type: ignore[arg-type]
            self.model, self.tokenizer = model, tokenizer
            if self.device.startswith("cuda"):
                # Padded batches call SDPA with a mask, which torch 2.11 sends to cuDNN first; cuDNN builds a
                # plan for every new (batch, length) shape, i.e. nearly every step of every new batch: 3.6 s
                # instead of 0.4 s for a first batch of 16 on an H100. Flash/efficient attention have no such
                # cost. Process-wide, on purpose: this process exists to serve models.
                torch.backends.cuda.enable_cudnn_sdp(False)
            self._eos_token_ids = _eos_token_ids(model, tokenizer)
            if tokenizer.pad_token is None and tokenizer.eos_token is not None:
                tokenizer.pad_token = tokenizer.eos_token  # batches are padded; EOS is the usual stand-in
        except torch.cuda.OutOfMemoryError as exc:
            self.close()
            raise TransientModelError(f"out of GPU memory loading {self.path}: {exc}") from exc
        except Exception as exc:
            self.close()
            raise PermanentModelError(
                f"cannot load a transformers model from {self.path}: {type(exc).__name__}: {exc}"
            ) from exc

    def _compile(self, settings: CompileSettings) -> None:
        """Compile every shape now, on the decode thread (which serves them), before any request runs."""
        assert self.model is not None and self.tokenizer is not None  # loaded, or _load raised
        compiled = CompiledDecoding(self.model, settings, self.device)
        pad_token_id = _pad_token_id(self.tokenizer)
        filler = pad_token_id if pad_token_id is not None else 0
        try:
            compiled.warm_up(filler_token=filler, pad_token_id=pad_token_id)
        except Exception as exc:
            compiled.release()
            self.compile_failure = f"{type(exc).__name__}: {exc}"
            if not settings.asked:  # "auto": the model still serves, on the dynamic path
                logger.warning("compiled decoding of %s failed, serving without: %s", self.path, self.compile_failure)
                return
            self.close()
            if isinstance(exc, torch.cuda.OutOfMemoryError):
                raise TransientModelError(
                    f"out of GPU memory compiling {self.path} (fewer compile_batch_sizes or compile_cache_lengths "
                    f"need less): {exc}"
                ) from exc
            raise PermanentModelError(
                f"compiled decoding failed for {self.path} (compiled_decoding false turns it off): "
                f"{self.compile_failure}"
            ) from exc
        self.compiled = compiled
        logger.info("compiled decoding of %s: %s", self.path, self.compiled_decoding)

    @property
    def compiled_decoding(self) -> str:
        """On (with what the warm-up took) or off, in words: for logs and ``check_model``."""
        if self.compiled is not None and self.compiled.warm_up_report is not None:
            return f"on: {self.compiled.warm_up_report.describe()}"
        if self.compile_failure:
            return f"off: compiling failed ({self.compile_failure[:300]})"
        return "off"

    @property
    def warm_up(self) -> WarmUp | None:
        """What compiling took at load (None when compiled decoding is off)."""
        return self.compiled.warm_up_report if self.compiled is not None else None

    def close(self) -> None:
        """Stop the scheduler (the running batch finishes; queued requests fail) and free the model."""
        self._scheduler.close(self._closed_error())
        if self.compiled is not None:
            self.compiled.release()
        self.model = self.processor = self.tokenizer = self.compiled = None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _closed_error(self) -> PermanentModelError:
        return PermanentModelError(f"the transformers model from {self.path} was closed")

    @property
    def batch_sizes(self) -> dict[int, int]:
        """Batch size -> how many batches (slices) of that size ran, since loading (tests, benchmarks)."""
        return self._scheduler.batch_sizes

    @property
    def decoding_shapes(self) -> dict[Shape | None, int]:
        """Compiled shape -> how many batches ran with it since loading; None: the dynamic path."""
        return dict(self.compiled.batches) if self.compiled is not None else {}

    # -- generation ----------------------------------------------------------------------------------------

    def _chunks(self, request: ModelRequest, stream: Stream) -> Iterator[str]:
        if self.model is None or self.tokenizer is None:
            raise self._closed_error()
        tokenizer = self.tokenizer
        image_count = sum(len(message.images) for message in request.messages)
        if image_count and not self.multimodal:
            raise PermanentModelError(
                f"the model at {self.path} is text-only; it cannot take the {image_count} image(s) in this request"
            )
        key = _batch_key(request.settings)
        with self._scheduler.arriving(key):  # a batch being gathered waits for this request
            job = self._job(request, tokenizer, key)
            if not self._scheduler.submit(job):
                raise self._closed_error()
        cutter = StopCutter(request.settings.stop)
        finished = False
        try:
            for piece in job.texts():
                yield cutter.feed(piece)
                if cutter.stopped:
                    break  # stop string seen: no need for more tokens
            yield cutter.flush()
            finished = True
        finally:
            # Stop string, or the caller walked away: this row stops at its next token; the others go on.
            job.cancel()
        if finished:
            job.ended.wait()  # at most one more token, for the counts
        if job.error is not None:
            raise job.error
        stream.prompt_tokens = job.prompt_tokens
        stream.completion_tokens = job.completion_tokens
        stream.first_token_at = job.first_token_at

    def _job(self, request: ModelRequest, tokenizer: PreTrainedTokenizerBase, key: Hashable) -> BatchJob[Row]:
        """The request's prompt and images, encoded in the caller's thread: while a batch runs, not after it."""
        try:
            images = [part.to_pil() for message in request.messages for part in message.images]
        except Exception as exc:
            raise PermanentModelError(
                f"cannot read an image in the request: {type(exc).__name__}: {exc}"
            ) from exc
        prompt = self._prompt(request, tokenizer)
        bos = tokenizer.bos_token
        # The template may already start with BOS; do not add a second one.
        add_special_tokens = not (bos and prompt.startswith(bos))
        job: BatchJob[Row] = BatchJob(
            payload=Row(self._encode(prompt, images, add_special_tokens), request.settings),
            key=key,
            max_new_tokens=request.settings.max_new_tokens,
        )
        job.prompt_tokens = len(job.payload.prompt.input_ids)
        return job

    def _encode(self, prompt: str, images: list[Image.Image], add_special_tokens: bool) -> EncodedPrompt:
        options: dict[str, Any] = {"return_tensors": "pt", "add_special_tokens": add_special_tokens}
        try:
            with self._encoding:
                if self.processor is not None:
                    encoding = self.processor(text=[prompt], images=images or None, **options)
                else:
                    assert self.tokenizer is not None  # checked by _chunks
                    encoding = self.tokenizer([prompt], **options)
            return EncodedPrompt.from_encoding(encoding)
        except Exception as exc:
            raise PermanentModelError(
                f"cannot prepare the input for {self.path}: {type(exc).__name__}: {exc}"
            ) from exc

    def _run_batch(self, jobs: list[BatchJob[Row]]) -> Sequence[BatchJob[Row]]:
        """One slice of a batch; returns the jobs that go on. Runs on the scheduler thread; ``generate()`` runs on
        the decode thread when decoding is compiled."""
        started = time.perf_counter()
        model, tokenizer = self.model, self.tokenizer
        if model is None or tokenizer is None:
            raise self._closed_error()
        lengths = [len(job.payload.prompt.input_ids) + len(job.generated) for job in jobs]
        left = [(job.max_new_tokens or 0) - job.completion_tokens for job in jobs]
        if self.compiled is not None:
            longest = max(length + more for length, more in zip(lengths, left, strict=True))
            plan = self.compiled.plan(len(jobs), max(lengths), max(left), longest)
        else:
            plan = Plan(None, max(left))
        settings = jobs[0].payload.settings  # the batch key makes these the same for every row
        rows = plan.shape.rows if plan.shape is not None else len(jobs)
        pad_token_id = _pad_token_id(tokenizer)
        inputs = self._batch(jobs, pad_token_id, filler_rows=rows - len(jobs))
        if settings.seed is not None:
            torch.manual_seed(settings.seed)
        done = RowsDone(
            jobs,
            rows,
            max_new_tokens=plan.max_new_tokens,
            newcomers=lambda: self._scheduler.newcomers(jobs),
            # A seeded row draws from one random stream from start to end: it never stops half-way.
            slice_tokens=0 if settings.seed is not None else self.batch_slice_tokens,
            started=started,
        )
        kwargs: dict[str, Any] = dict(
            max_new_tokens=plan.max_new_tokens,
            streamer=RowStreamer(tokenizer, jobs, self._eos_token_ids),
            stopping_criteria=StoppingCriteriaList([done]),
            pad_token_id=pad_token_id,
        )
        if settings.temperature > 0:
            kwargs.update(do_sample=True, temperature=settings.temperature, top_p=settings.top_p)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        compiled, shape = self.compiled, plan.shape

        def generate() -> None:
            with torch.inference_mode():  # the static caches are inference tensors: reset them in this mode too
                if shape is not None:
                    assert compiled is not None  # plans with a shape come from it
                    kwargs.update(compiled.generate_options(shape))
                model.generate(**inputs, **kwargs)

        if compiled is not None:
            run_on_decode_thread(generate)
        else:
            generate()
        self.slice_timings.append(done.timing())
        return jobs

    def _batch_error(self, exc: Exception) -> Exception:
        """What every request of a failed batch gets."""
        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return TransientModelError(f"out of GPU memory generating with {self.path}: {exc}")
        if isinstance(exc, PermanentModelError):
            return exc
        return PermanentModelError(f"generation failed with {self.path}: {type(exc).__name__}: {exc}")

    def _batch(self, jobs: list[BatchJob[Row]], pad_token_id: int | None, *, filler_rows: int) -> dict[str, Any]:
        """The jobs' rows (prompt and tokens so far), left-padded, on the model's device and in its dtype."""
        try:
            batch = collate(
                [(job.payload.prompt, job.generated) for job in jobs],
                pad_token_id=pad_token_id if pad_token_id is not None else 0,
                filler_rows=filler_rows,
            )
        except Exception as exc:
            raise PermanentModelError(
                f"cannot batch the inputs for {self.path} (set max_batch_size to 1 if its processor's output "
                f"cannot be batched): {type(exc).__name__}: {exc}"
            ) from exc
        moved: dict[str, Any] = {}
        for key, value in batch.items():
            if isinstance(value, torch.Tensor):
                value = value.to(self.device)
                if value.is_floating_point():
                    value = value.to(self._torch_dtype)
            moved[key] = value
        return moved

    def _prompt(self, request: ModelRequest, tokenizer: PreTrainedTokenizerBase) -> str:
        conversation: list[ChatTurn] = []
        for message in request.messages:
            if self.multimodal:
                parts: list[ContentPart] = [
                    {"type": "image"} if isinstance(part, ImagePart) else {"type": "text", "text": part}
                    for part in message.content
                ]
                conversation.append({"role": message.role, "content": parts})
            else:
                conversation.append({"role": message.role, "content": message.text_content})
        owner = self.processor if self.processor is not None else tokenizer
        if getattr(owner, "chat_template", None) is None:
            # A base model without a template: a plain transcript still gets an answer.
            lines = [f"{turn['role']}: {_plain_text(turn['content'])}" for turn in conversation]
            return "\n".join(lines) + "\nassistant:"
        try:
            # transformers annotates a conversation as str-valued dicts, though processors take lists of parts
            prompt = owner.apply_chat_template(
                conversation,  # type: ignore[arg-type]
                add_generation_prompt=True,
                tokenize=False,
            )
        except Exception as exc:
            raise PermanentModelError(
                f"the chat template of {self.path} failed: {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(prompt, str):
            raise PermanentModelError(f"the chat template of {self.path} gave {type(prompt).__name__}, not text")
        return prompt


def _batch_key(settings: GenerationSettings) -> Hashable:
    """Requests with equal keys may share a batch. Stop strings are cut per request, on the reader's side, and
    each row ends at its own max_new_tokens."""
    if settings.temperature <= 0:  # greedy: temperature, top_p and seed play no part
        return ("greedy",)
    if settings.seed is not None:
        # A batch draws from one random stream, so a seeded row's answer would depend on its neighbours.
        return object()  # equal to no other key: runs alone
    return ("sample", settings.temperature, settings.top_p)


def _eos_token_ids(model: GenerativeModel, tokenizer: PreTrainedTokenizerBase) -> set[int]:
    configured = model.generation_config.eos_token_id
    ids = set(configured if isinstance(configured, list | tuple) else [configured])
    ids.add(tokenizer.eos_token_id)
    return {int(token_id) for token_id in ids if token_id is not None}


def _pad_token_id(tokenizer: PreTrainedTokenizerBase) -> int | None:
    # Many chat checkpoints have no pad token; EOS is the usual stand-in (0 is a valid id, so no `or`).
    token_id: int | None = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    return token_id


def _plain_text(content: str | list[ContentPart]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join("<image>" if part["type"] == "image" else part["text"] for part in content)
