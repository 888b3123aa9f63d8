"""A local Hugging Face checkpoint, loaded once per process and kept warm.

Settings:

- ``path`` (required): a local directory written by ``save_pretrained``. Never a hub id: nothing is downloaded.
- ``device``: "auto" (default: cuda when available, else cpu), "cpu" or "cuda" (or "cuda:N").
- ``dtype``: "auto" (default: bfloat16 on cuda, float32 on cpu), "bfloat16", "float16" or "float32".

Image-text-to-text checkpoints load with ``AutoProcessor`` + ``AutoModelForImageTextToText``; anything else
falls back to ``AutoTokenizer`` + ``AutoModelForCausalLM`` and rejects requests with images. Generation runs
in a background thread feeding a ``TextIteratorStreamer``; a lock lets one request use the model at a time.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForImageTextToText,
    AutoProcessor,
    AutoTokenizer,
    StoppingCriteria,
    StoppingCriteriaList,
    TextIteratorStreamer,
)
from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

from models_runtime.base import (
    Backend,
    ImagePart,
    ModelRequest,
    PermanentModelError,
    Stream,
    TransientModelError,
)
from models_runtime.textstream import StopCutter

SETTINGS_KEYS = {"path", "device", "dtype"}
DTYPES = ("bfloat16", "float16", "float32")


class TransformersBackend(Backend):
    name = "transformers"

    def __init__(self, settings: dict | None = None):
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
        self._lock = threading.Lock()
        self.model = None
        self.processor = None
        self.tokenizer = None
        self.multimodal = False
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
                self.tokenizer = getattr(self.processor, "tokenizer", None)
                if self.tokenizer is None:
                    raise ValueError(f"the processor {type(self.processor).__name__} has no tokenizer")
                self.model = AutoModelForImageTextToText.from_pretrained(self.path, **model_kwargs)
            else:
                self.tokenizer = AutoTokenizer.from_pretrained(self.path, **common)
                self.model = AutoModelForCausalLM.from_pretrained(self.path, **model_kwargs)
            self.model.to(self.device).eval()
        except torch.cuda.OutOfMemoryError as exc:
            self.close()
            raise TransientModelError(f"out of GPU memory loading {self.path}: {exc}") from exc
        except Exception as exc:
            self.close()
            raise PermanentModelError(
                f"cannot load a transformers model from {self.path}: {type(exc).__name__}: {exc}"
            ) from exc

    def close(self) -> None:
        with self._lock:  # waits for a generation in progress
            self.model = self.processor = self.tokenizer = None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    # -- generation ----------------------------------------------------------------------------------------

    def _chunks(self, request: ModelRequest, stream: Stream) -> Iterator[str]:
        tokenizer = self.tokenizer
        if self.model is None or tokenizer is None:
            raise PermanentModelError(f"the transformers model from {self.path} was closed")
        image_count = sum(len(message.images) for message in request.messages)
        if image_count and not self.multimodal:
            raise PermanentModelError(
                f"the model at {self.path} is text-only; it cannot take the {image_count} image(s) in this request"
            )
        streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
        cancel = threading.Event()
        outcome: dict = {}
        worker = threading.Thread(
            target=self._generate,
            args=(request, streamer, cancel, outcome),
            name="transformers-generate",
            daemon=True,
        )
        worker.start()
        cutter = StopCutter(request.settings.stop)
        finished = False
        try:
            for piece in streamer:
                yield cutter.feed(piece)
                if cutter.stopped:
                    cancel.set()  # stop string seen: no need for more tokens
                    break
            yield cutter.flush()
            finished = True
        finally:
            # If the caller walked away, let the worker stop at its next token; do not wait for it.
            cancel.set()
        if finished:
            worker.join()
        if "error" in outcome:
            raise outcome["error"]
        stream.prompt_tokens = outcome.get("prompt_tokens")
        stream.completion_tokens = outcome.get("completion_tokens")

    def _generate(self, request: ModelRequest, streamer, cancel: threading.Event, outcome: dict) -> None:
        """Runs in the background thread; reports text through ``streamer`` and the rest through ``outcome``.

        Tokenizing happens under the lock too: fast tokenizers are not safe to share between threads.
        """
        settings = request.settings
        try:
            with self._lock:
                if cancel.is_set():
                    return
                if self.model is None:
                    raise PermanentModelError(f"the transformers model from {self.path} was closed")
                inputs = self._inputs(request)
                prompt_tokens = int(inputs["input_ids"].shape[1])
                outcome["prompt_tokens"] = prompt_tokens
                if settings.seed is not None:
                    torch.manual_seed(settings.seed)
                kwargs = dict(
                    max_new_tokens=settings.max_new_tokens,
                    streamer=streamer,
                    stopping_criteria=StoppingCriteriaList([_Cancelled(cancel)]),
                    pad_token_id=_pad_token_id(self.tokenizer),
                )
                if settings.temperature > 0:
                    kwargs.update(do_sample=True, temperature=settings.temperature, top_p=settings.top_p)
                else:
                    kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
                with torch.inference_mode():
                    output = self.model.generate(**inputs, **kwargs)
                outcome["completion_tokens"] = int(output.shape[1]) - prompt_tokens
        except torch.cuda.OutOfMemoryError as exc:
            outcome["error"] = TransientModelError(f"out of GPU memory generating with {self.path}: {exc}")
        except PermanentModelError as exc:
            outcome["error"] = exc
        except Exception as exc:
            outcome["error"] = PermanentModelError(
                f"generation failed with {self.path}: {type(exc).__name__}: {exc}"
            )
        finally:
            if "error" in outcome or cancel.is_set():
                streamer.end()  # unblock the reader; generate() may not have reached its own end()

    def _inputs(self, request: ModelRequest) -> dict:
        """Chat template + tokenizer/processor, moved to the model's device and dtype."""
        try:
            images = [part.to_pil() for message in request.messages for part in message.images]
        except Exception as exc:
            raise PermanentModelError(
                f"cannot read an image in the request: {type(exc).__name__}: {exc}"
            ) from exc
        prompt = self._prompt(request)
        bos = self.tokenizer.bos_token
        # The template may already start with BOS; do not add a second one.
        add_special_tokens = not (bos and prompt.startswith(bos))
        try:
            if self.multimodal:
                encoded = self.processor(
                    text=[prompt],
                    images=images or None,
                    return_tensors="pt",
                    add_special_tokens=add_special_tokens,
                )
            else:
                encoded = self.tokenizer([prompt], return_tensors="pt", add_special_tokens=add_special_tokens)
        except Exception as exc:
            raise PermanentModelError(
                f"cannot prepare the input for {self.path}: {type(exc).__name__}: {exc}"
            ) from exc
        moved = {}
        for key, value in encoded.items():
            if hasattr(value, "to"):
                value = value.to(self.device)
                if value.is_floating_point():
                    value = value.to(self._torch_dtype)
            moved[key] = value
        return moved

    def _prompt(self, request: ModelRequest) -> str:
        conversation = []
        for message in request.messages:
            if self.multimodal:
                parts = [
                    {"type": "image"} if isinstance(part, ImagePart) else {"type": "text", "text": part}
                    for part in message.content
                ]
                conversation.append({"role": message.role, "content": parts})
            else:
                conversation.append({"role": message.role, "content": message.text_content})
        owner = self.processor if self.multimodal else self.tokenizer
        if getattr(owner, "chat_template", None) is None:
            # A base model without a template: a plain transcript still gets an answer.
            lines = [f"{turn['role']}: {_plain_text(turn['content'])}" for turn in conversation]
            return "\n".join(lines) + "\nassistant:"
        try:
            return owner.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
        except Exception as exc:
            raise PermanentModelError(
                f"the chat template of {self.path} failed: {type(exc).__name__}: {exc}"
            ) from exc


class _Cancelled(StoppingCriteria):
    """Ends generation at the next token once the reader is gone or has seen a stop string."""

    def __init__(self, event: threading.Event):
        self.event = event

    def __call__(self, input_ids, scores, **kwargs):
        return torch.full(
            (input_ids.shape[0],), self.event.is_set(), dtype=torch.bool, device=input_ids.device
        )


def _pad_token_id(tokenizer) -> int | None:
    # Many chat checkpoints have no pad token; EOS is the usual stand-in (0 is a valid id, so no `or`).
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def _plain_text(content) -> str:
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
