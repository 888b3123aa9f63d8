"""A local Hugging Face checkpoint, loaded once per process and kept warm.

Settings:

- ``path`` (required): a local directory written by ``save_pretrained``. Never a hub id: nothing is downloaded.
- ``device``: "auto" (default: cuda when available, else cpu), "cpu" or "cuda" (or "cuda:N").
- ``dtype``: "auto" (default: bfloat16 on cuda, float32 on cpu), "bfloat16", "float16" or "float32".
- ``max_batch_size``: how many concurrent requests may share one ``generate()`` (default 8; 1 = one at a time).
- ``batch_wait_ms``: how long to wait for more requests to join a batch once the first arrives (default 5).

Image-text-to-text checkpoints load with ``AutoProcessor`` + ``AutoModelForImageTextToText``; anything else
falls back to ``AutoTokenizer`` + ``AutoModelForCausalLM`` and rejects requests with images. One scheduler
thread owns the model (``models_runtime/batching.py``): concurrent ``stream()`` calls (a Celery worker with
``-P threads``) queue their request; requests with the same generation settings run as one left-padded batch,
each row streaming to its own caller. Seeded sampling runs alone, so a seed gives the same answer under load.
Set ``max_batch_size`` to 1 for a checkpoint whose processor cannot pad a batch.
"""

from __future__ import annotations

import gc
import math
import os
from collections.abc import Hashable, Iterator, Mapping
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
from models_runtime.batching import BatchJob, BatchScheduler, RowsCancelled, RowStreamer
from models_runtime.textstream import StopCutter

SETTINGS_KEYS = {"path", "device", "dtype", "max_batch_size", "batch_wait_ms"}
DTYPES = ("bfloat16", "float16", "float32")


class GenerativeModel(Protocol):
    """What this backend uses of a loaded checkpoint (a ``PreTrainedModel`` with ``GenerationMixin``)."""

    generation_config: GenerationConfig

    def generate(self, **kwargs: Any) -> Any: ...


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
    """One request's row of a batch, prepared in the caller's thread."""

    prompt: str
    images: list[Image.Image]
    settings: GenerationSettings
    add_special_tokens: bool  # part of the batch key too: the same for every row of a batch


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
        self.device = _resolve_device(self.settings.get("device", "auto"))
        self.dtype = _resolve_dtype(self.settings.get("dtype", "auto"), self.device)
        self._torch_dtype = getattr(torch, self.dtype)
        self.max_batch_size = _setting_int(self.settings, "max_batch_size", 8, minimum=1)
        self.batch_wait_ms = _setting_float(self.settings, "batch_wait_ms", 5, minimum=0)
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
        self._load()

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

    def close(self) -> None:
        """Stop the scheduler (the running batch finishes; queued requests fail) and free the model."""
        self._scheduler.close(self._closed_error())
        self.model = self.processor = self.tokenizer = None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _closed_error(self) -> PermanentModelError:
        return PermanentModelError(f"the transformers model from {self.path} was closed")

    @property
    def batch_sizes(self) -> dict[int, int]:
        """Batch size -> how many batches of that size ran, since loading (tests, benchmarks)."""
        return self._scheduler.batch_sizes

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
        job = self._job(request, tokenizer)
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

    def _job(self, request: ModelRequest, tokenizer: PreTrainedTokenizerBase) -> BatchJob[Row]:
        """Images and prompt text, prepared in the caller's thread (tokenizing waits for the scheduler's)."""
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
        return BatchJob(
            payload=Row(prompt, images, request.settings, add_special_tokens),
            key=(_batch_key(request.settings), add_special_tokens),
        )

    def _run_batch(self, jobs: list[BatchJob[Row]]) -> None:
        """Runs on the scheduler thread, the only one that tokenizes: fast tokenizers are not thread-safe."""
        model, tokenizer = self.model, self.tokenizer
        if model is None or tokenizer is None:
            raise self._closed_error()
        inputs = self._inputs(jobs, tokenizer)
        mask = inputs.get("attention_mask")
        counts = mask.sum(dim=1).tolist() if mask is not None else [inputs["input_ids"].shape[1]] * len(jobs)
        for job, count in zip(jobs, counts, strict=True):
            job.prompt_tokens = int(count)
        settings = jobs[0].payload.settings  # the batch key makes these the same for every row
        if settings.seed is not None:
            torch.manual_seed(settings.seed)
        kwargs: dict[str, Any] = dict(
            max_new_tokens=settings.max_new_tokens,
            streamer=RowStreamer(tokenizer, jobs, self._eos_token_ids),
            stopping_criteria=StoppingCriteriaList([RowsCancelled(jobs)]),
            pad_token_id=_pad_token_id(tokenizer),
        )
        if settings.temperature > 0:
            kwargs.update(do_sample=True, temperature=settings.temperature, top_p=settings.top_p)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            model.generate(**inputs, **kwargs)

    def _batch_error(self, exc: Exception) -> Exception:
        """What every request of a failed batch gets."""
        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return TransientModelError(f"out of GPU memory generating with {self.path}: {exc}")
        if isinstance(exc, PermanentModelError):
            return exc
        return PermanentModelError(f"generation failed with {self.path}: {type(exc).__name__}: {exc}")

    def _inputs(self, jobs: list[BatchJob[Row]], tokenizer: PreTrainedTokenizerBase) -> dict[str, Any]:
        """One left-padded batch from the tokenizer/processor, moved to the model's device and dtype."""
        prompts = [job.payload.prompt for job in jobs]
        images = [image for job in jobs for image in job.payload.images]  # flat, in row order, as processors take them
        options: dict[str, Any] = {"return_tensors": "pt", "add_special_tokens": jobs[0].payload.add_special_tokens}
        if len(jobs) > 1:
            options.update(padding=True, padding_side="left")
        try:
            if self.processor is not None:
                encoded = self.processor(text=prompts, images=images or None, **options)
            else:
                encoded = tokenizer(prompts, **options)
        except Exception as exc:
            hint = f" (a batch of {len(jobs)}: set max_batch_size to 1 if it cannot batch)" if len(jobs) > 1 else ""
            raise PermanentModelError(
                f"cannot prepare the input for {self.path}{hint}: {type(exc).__name__}: {exc}"
            ) from exc
        moved: dict[str, Any] = {}
        for key, value in encoded.items():
            if hasattr(value, "to"):
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
    """Requests with equal keys may share a batch (stop strings are cut per request, on the reader's side)."""
    if settings.temperature <= 0:  # greedy: temperature, top_p and seed play no part
        return ("greedy", settings.max_new_tokens)
    if settings.seed is not None:
        # A batch draws from one random stream, so a seeded row's answer would depend on its neighbours.
        return object()  # equal to no other key: runs alone
    return ("sample", settings.max_new_tokens, settings.temperature, settings.top_p)


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


def _resolve_device(value: str) -> str:
    value = str(value or "auto").lower()
    if value == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if value == "cpu":
        return value
    if value == "cuda" or value.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise PermanentModelError(
                f'device "{value}" was asked for, but CUDA is not available on this machine'
            )
        return value
    raise PermanentModelError(f'unknown device "{value}": use "auto", "cpu" or "cuda"')


def _resolve_dtype(value: str, device: str) -> str:
    value = str(value or "auto").lower()
    if value == "auto":
        return "bfloat16" if device.startswith("cuda") else "float32"
    if value not in DTYPES:
        raise PermanentModelError(f'unknown dtype "{value}": use "auto", {", ".join(DTYPES)}')
    return value


def _setting_int(settings: Mapping[str, Any], key: str, default: int, *, minimum: int) -> int:
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _bad_number(key, "an integer", minimum, value)
    return value


def _setting_float(settings: Mapping[str, Any], key: str, default: float, *, minimum: int) -> float:
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < minimum:
        raise _bad_number(key, "a number", minimum, value)
    return value


def _bad_number(key: str, kind: str, minimum: int, value: object) -> PermanentModelError:
    return PermanentModelError(f'transformers setting "{key}" must be {kind} >= {minimum}, got {value!r}')
