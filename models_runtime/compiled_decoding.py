"""Compiled decoding for the transformers backend: transformers' static KV cache and its ``torch.compile`` of the
decode step, over a small, fixed set of shapes compiled when the model loads.

transformers compiles only the decode step (``generate`` with a compileable cache and a ``compile_config``); the
prefill runs eagerly, so a prompt's length matters only through the length of the cache. A compiled shape is a
(batch size, cache length) pair: a batch is padded up to the next of ``compile_batch_sizes`` with filler rows and
takes the smallest of ``compile_cache_lengths`` that holds its prompts and new tokens. Each shape keeps its own
``StaticCache`` (reset between batches), so the CUDA graphs recorded for it stay valid: no recompiling and no
re-recording while serving. A batch that fits no shape runs the dynamic path, exactly as without compiling.

Settings (transformers backend):

- ``compiled_decoding``: true, false or "auto" (default: on with CUDA, off on the CPU).
- ``compile_batch_sizes``: batch sizes to compile (default: 1, 2, 4, ... below ``max_batch_size``, and it).
- ``compile_cache_lengths``: cache lengths, prompt + new tokens (default 1024, 2048). Memory: each shape holds a
  cache of batch size x cache length tokens.
- ``compile_backend``: a ``torch.compile`` backend (default "inductor", with CUDA graphs on a GPU).

Everything compiled runs on one thread per process (``models_runtime/decode_thread.py``): the warm-up, every
``generate()`` of a compiled model and the reset when the last one is released.

transformers compiles the decode step on accelerators only, so ``compiled_decoding`` true needs CUDA. The runtime's
own tests (and ``benchmarks/gpu_serving.py`` run on the CPU) compile on the CPU, with torch.compile's "eager"
backend, by setting ``TESTS_COMPILE_ON_CPU``, which lifts that limit through a flag transformers keeps for its
tests; nothing else sets it.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from transformers import CompileConfig, StaticCache

from models_runtime.base import PermanentModelError
from models_runtime.decode_thread import run_on_decode_thread
from models_runtime.settings import SettingsReader

logger = logging.getLogger(__name__)

COMPILE_KEYS = {"compiled_decoding", "compile_batch_sizes", "compile_cache_lengths", "compile_backend"}
DEFAULT_CACHE_LENGTHS = (1024, 2048)
# cudagraph trees run a new shape once to warm up, record it on the next call and replay it after: three decode
# steps (four new tokens, the first from the prefill) leave every shape recorded.
WARM_UP_NEW_TOKENS = 4
# Tests only: compile on the CPU too (see the module's docstring and tests/runtime_fixtures.py).
TESTS_COMPILE_ON_CPU = False

_live_lock = threading.Lock()
_live = 0  # CompiledDecoding objects not yet released in this process


class Shape(NamedTuple):
    rows: int
    cache_length: int


class Plan(NamedTuple):
    """How one batch runs: ``shape`` None is the dynamic path; ``max_new_tokens`` may be cut to fit the cache,
    in which case the rows go on in a later batch."""

    shape: Shape | None
    max_new_tokens: int


@dataclass(frozen=True)
class Buckets:
    batch_sizes: tuple[int, ...]  # sorted
    cache_lengths: tuple[int, ...]  # sorted

    def plan(self, rows: int, width: int, new_tokens: int, longest: int) -> Plan:
        """``rows`` requests left-padded to ``width`` tokens, up to ``new_tokens`` more each; ``longest``: the most
        tokens any one row needs in all (its prompt, what it generated so far and what it may still generate)."""
        batch = next((size for size in self.batch_sizes if size >= rows), None)
        if batch is None or longest > self.cache_lengths[-1]:
            return Plan(None, new_tokens)
        length = next((length for length in self.cache_lengths if length >= width + new_tokens), None)
        if length is not None:
            return Plan(Shape(batch, length), new_tokens)
        # Left padding makes rows share cache positions: the batch fits if it stops early (the longest row
        # fits, so at least one token) and the rows go on in the next batch, narrower or with other rows.
        largest = self.cache_lengths[-1]
        return Plan(Shape(batch, largest), largest - width)

    def warm_up_order(self) -> list[Shape]:
        """Every shape, the two smallest batch sizes first for each length: torch.compile specialises batch size 1
        and, once it has seen a second size (or length), compiles one graph for all the others."""
        return [Shape(batch, length) for length in self.cache_lengths for batch in self.batch_sizes]


@dataclass(frozen=True)
class CompileSettings:
    buckets: Buckets
    backend: str
    asked: bool  # compiled_decoding true: a failure to compile fails the load ("auto" serves dynamically then)

    @classmethod
    def read(cls, reader: SettingsReader, *, device: str, max_batch_size: int) -> CompileSettings | None:
        """The settings, checked even when compiling is off; None when it is off."""
        enabled = reader.switch("compiled_decoding")
        batch_sizes = reader.sizes("compile_batch_sizes", default_batch_sizes(max_batch_size), minimum=1)
        if batch_sizes[-1] > max_batch_size:
            raise PermanentModelError(
                f'transformers setting "compile_batch_sizes" has {batch_sizes[-1]}, more than max_batch_size '
                f"({max_batch_size}): no batch is ever that large"
            )
        cache_lengths = reader.sizes("compile_cache_lengths", DEFAULT_CACHE_LENGTHS, minimum=16)
        backend = reader.settings.get("compile_backend", "inductor")
        known = torch.compiler.list_backends(exclude_tags=())
        if backend not in known:
            raise PermanentModelError(
                f'transformers setting "compile_backend" must be a torch.compile backend (e.g. "inductor", '
                f'"cudagraphs", "eager"), got {backend!r}'
            )
        asked = enabled is True
        if enabled == "auto":
            enabled = device.startswith("cuda")
        elif enabled and not device.startswith("cuda") and not TESTS_COMPILE_ON_CPU:
            raise PermanentModelError(
                f'transformers setting "compiled_decoding" true needs a CUDA device (device is "{device}"): '
                'transformers compiles the decode step on GPUs only; "auto" turns it on where it can'
            )
        return cls(Buckets(batch_sizes, cache_lengths), backend, asked) if enabled else None


def default_batch_sizes(max_batch_size: int) -> tuple[int, ...]:
    """1, 2, 4, ... below max_batch_size, and max_batch_size itself."""
    sizes = {max_batch_size}
    size = 1
    while size < max_batch_size:
        sizes.add(size)
        size *= 2
    return tuple(sorted(sizes))


@dataclass(frozen=True)
class WarmUp:
    """What compiling at load took, for the logs and ``check_model``."""

    shapes: int
    seconds: float
    gpu_memory_mib: int | None  # GPU memory reserved at the warm-up's peak above before it (None on the CPU)

    def describe(self) -> str:
        memory = f", {self.gpu_memory_mib} MiB more GPU memory reserved" if self.gpu_memory_mib is not None else ""
        shapes = f"{self.shapes} shape{'s' if self.shapes != 1 else ''}"
        return f"{shapes} compiled in {self.seconds:.1f} s{memory}"


class CompiledDecoding:
    """The compiled shapes of one loaded model: its caches, its compile config and what ran how (for benchmarks)."""

    def __init__(self, model: Any, settings: CompileSettings, device: str):
        self.model = model
        self.buckets = settings.buckets
        cuda = device.startswith("cuda")
        inductor = settings.backend == "inductor"
        # "reduce-overhead" is inductor's CUDA graphs; other backends take no mode.
        mode = "reduce-overhead" if inductor and cuda else "default" if inductor else None
        self.compile_config = CompileConfig(backend=settings.backend, mode=mode)  # type: ignore[arg-type]  # None: no mode
        if not cuda and TESTS_COMPILE_ON_CPU:
            # transformers' own flag for compiling on any device, "useful for testing purposes" (its words).
            self.compile_config._compile_all_devices = True  # type: ignore[assignment]  # declared None
        # The keyword a cache is passed by: "cache" in recent transformers, "past_key_values" before.
        parameters = inspect.signature(model.forward).parameters
        self.cache_argument = "cache" if "cache" in parameters else "past_key_values"
        self._caches: dict[Shape, StaticCache] = {}
        self.batches: Counter[Shape | None] = Counter()  # batches run per shape; None: the dynamic path
        self.warm_up_report: WarmUp | None = None
        global _live
        with _live_lock:
            _live += 1
        self._released = False

    def release(self) -> None:
        """Drop the caches. The last one released in a process also clears torch.compile's caches: a model loaded
        next (a changed config) compiles afresh, within torch.compile's limit of recompiles per function."""
        global _live
        self._caches.clear()
        with _live_lock:
            if self._released:
                return
            self._released = True
            _live -= 1
            last = _live == 0
        if last:
            run_on_decode_thread(torch.compiler.reset)  # CUDA graphs are reset on the thread that owns them

    def plan(self, rows: int, width: int, new_tokens: int, longest: int) -> Plan:
        plan = self.buckets.plan(rows, width, new_tokens, longest)
        self.batches[plan.shape] += 1
        return plan

    def generate_options(self, shape: Shape) -> dict[str, Any]:
        """``generate`` options for a batch of this shape: its own static cache (emptied) and the compile config."""
        cache = self._caches.get(shape)
        if cache is None:
            cache = self._caches[shape] = StaticCache(config=self.model.config, max_cache_len=shape.cache_length)
        else:
            cache.reset()
        # cache_implementation None: a checkpoint's generation config may name one, and transformers refuses both.
        return {self.cache_argument: cache, "compile_config": self.compile_config, "cache_implementation": None}

    def warm_up(self, *, filler_token: int, pad_token_id: int | None) -> WarmUp:
        """Compile every shape: a few greedy steps of filler rows each, on the decode thread (which serves them)."""
        return run_on_decode_thread(lambda: self._warm_up(filler_token, pad_token_id))

    def _warm_up(self, filler_token: int, pad_token_id: int | None) -> WarmUp:
        device = next(self.model.parameters()).device
        cuda = device.type == "cuda"
        reserved = torch.cuda.memory_reserved(device) if cuda else 0
        if cuda:  # the peak above what was reserved before: what the caches and CUDA graphs need (never below 0)
            torch.cuda.reset_peak_memory_stats(device)
        started = time.perf_counter()
        shapes = self.buckets.warm_up_order()
        for shape in shapes:
            input_ids = torch.full((shape.rows, 1), filler_token, dtype=torch.long, device=device)
            with torch.inference_mode():
                self.model.generate(
                    input_ids=input_ids,
                    attention_mask=torch.ones_like(input_ids),
                    max_new_tokens=WARM_UP_NEW_TOKENS,
                    min_new_tokens=WARM_UP_NEW_TOKENS,
                    do_sample=False,
                    pad_token_id=pad_token_id,
                    **self.generate_options(shape),
                )
            logger.info("compiled decoding: shape %s ready after %.1f s", tuple(shape), time.perf_counter() - started)
        if cuda:
            torch.cuda.synchronize(device)
        memory = max(0, torch.cuda.max_memory_reserved(device) - reserved) // 2**20 if cuda else None
        self.warm_up_report = WarmUp(len(shapes), time.perf_counter() - started, memory)
        return self.warm_up_report
