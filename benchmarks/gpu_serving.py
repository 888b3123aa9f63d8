"""The transformers backend on a GPU: compiled decoding against the dynamic path and against raw ``generate()``.

Builds the ~0.8B-parameter LLaVA-style checkpoint with random weights (``models_runtime.tiny.build_mid_llava``;
its answers never end early) and prints, as it goes, with the seconds since the start:

- backend (compiled decoding on): the warm-up at load, then tokens/s for one request at a time and for
  --requests concurrent ones (half with an image; a first burst, then three: their median is the figure), then time to
  the first model token and to the first text under a steady arrival rate, with batch slices on (the default)
  and off, and how often torch.compile compiled again while serving (never, if the warm-up did its job; the
  reasons are printed). With each, the backend's own ms per decode step (after the first token) by batch size
  and the time from building a batch to its first token.
- raw: the same rows through one ``model.generate()``, dynamic cache and ``cache_implementation="static"``
  (transformers compiles its decode step: the first call of each batch size, compile included, is shown apart),
  with ms per decode step measured the same way. It runs on the process's decode thread, as compiled decoding
  in the backend does: torch.compile's CUDA graphs work only on the thread that set them up (torch 2.11).
- dynamic: the same backend with compiled_decoding false (no arrivals).

Time to first text is what a reader sees: text is released a whole word at a time, and a random-weight model may
produce a space many tokens late. Time to the first model token is the serving's own.

Needs torch, transformers, Pillow (no Django, no project install); run from the repository root:

    python3 benchmarks/gpu_serving.py --json gpu.json
    python3 benchmarks/gpu_serving.py --device cpu --tiny          # the tiny checkpoint on the CPU, for CI
    python3 benchmarks/gpu_serving.py --quick --parts backend,raw

--budget-seconds (default 165) skips what would not end in time (raw static compiles, the dynamic part), saying
so, so a run under a hard time limit still prints its summary.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import sys
import tempfile
import threading
import time
import traceback
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from benchmarks.figures import percentile  # noqa: E402
from models_runtime import GenerationSettings, ImagePart, Message, ModelRequest, compiled_decoding  # noqa: E402
from models_runtime.backends.transformers import TransformersBackend  # noqa: E402
from models_runtime.batching import SliceTiming  # noqa: E402
from models_runtime.decode_thread import run_on_decode_thread  # noqa: E402

STARTED = time.perf_counter()
QUESTIONS = [
    "What is shown in the image? Answer with the letter of the correct option.",
    "Count the objects in the picture and give a number.",
    "Which colour is the square? A red, B blue, C green, D yellow.",
    "Look at the picture again and think about the shapes once more.",
]
PARTS = ("backend", "raw", "dynamic")
CONCURRENT_BURSTS = 3  # measured after the first; their median is the figure
SIZES = {  # the defaults of --requests etc.: the measurement, a shorter one, and one for the CPU
    "full": {"requests": 32, "new_tokens": 128, "single": 5, "rate": 20, "ttft_seconds": 6, "ttft_new_tokens": 64},
    "quick": {"requests": 16, "new_tokens": 64, "single": 2, "rate": 20, "ttft_seconds": 5, "ttft_new_tokens": 64},
    "tiny": {"requests": 8, "new_tokens": 24, "single": 2, "rate": 10, "ttft_seconds": 2, "ttft_new_tokens": 16},
}


def say(text: str) -> None:
    print(f"[{elapsed():7.1f} s] {text}", flush=True)


def elapsed() -> float:
    return time.perf_counter() - STARTED


def png(index: int, size: int) -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size), "white")
    colour = ((index * 53) % 256, (index * 101) % 256, (index * 197) % 256)
    ImageDraw.Draw(image).rectangle((size // 4, size // 4, 3 * size // 4, 3 * size // 4), fill=colour)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def make_requests(count: int, new_tokens: int, image_size: int) -> list[ModelRequest]:
    """Half with an image (the odd ones), questions of different lengths."""
    requests = []
    for index in range(count):
        content: tuple = (f"Question {index}. {QUESTIONS[index % len(QUESTIONS)]}",)
        if index % 2:
            content = (ImagePart(png(index, image_size)), *content)
        requests.append(
            ModelRequest(messages=(Message("user", content),), settings=GenerationSettings(max_new_tokens=new_tokens))
        )
    return requests


def run_together(backend: TransformersBackend, requests: list[ModelRequest]) -> dict:
    """All requests at once, one thread each; tokens/s over the wall time from the first to the last answer.
    The threads start behind a barrier, so the requests arrive together as the raw ``generate()``'s rows do:
    started one by one, the first could be served alone while the main thread was still starting the others."""
    results: list = [None] * len(requests)
    together = threading.Barrier(len(requests))

    def call(index: int) -> None:
        together.wait()
        try:
            results[index] = backend.stream(requests[index]).collect()
        except Exception as exc:  # counted and shown, the run goes on
            results[index] = exc

    threads = [threading.Thread(target=call, args=(index,)) for index in range(len(requests))]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return figures(results, time.perf_counter() - started)


def run_one_by_one(backend: TransformersBackend, requests: list[ModelRequest]) -> dict:
    results: list = []
    started = time.perf_counter()
    for request in requests:
        try:
            results.append(backend.stream(request).collect())
        except Exception as exc:
            results.append(exc)
    return figures(results, time.perf_counter() - started)


def run_arrivals(backend: TransformersBackend, requests: list[ModelRequest], rate: float) -> dict:
    """Requests arrive at a steady ``rate`` per second, whether or not earlier ones have finished."""
    results: list = [None] * len(requests)
    threads = []

    def call(index: int) -> None:
        try:
            results[index] = backend.stream(requests[index]).collect()
        except Exception as exc:
            results[index] = exc

    started = time.perf_counter()
    for index in range(len(requests)):
        delay = started + index / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        thread = threading.Thread(target=call, args=(index,))
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    return figures(results, time.perf_counter() - started)


def figures(results: list, wall: float) -> dict:
    answers = [result for result in results if not isinstance(result, BaseException)]
    errors = [result for result in results if isinstance(result, BaseException)]
    tokens = sum(result.completion_tokens or 0 for result in answers)
    ttft = [result.time_to_first_token or result.latency for result in answers]
    first_tokens = [result.time_to_first_model_token for result in answers if result.time_to_first_model_token]
    return {
        "requests": len(results),
        "errors": len(errors),
        "first_error": f"{type(errors[0]).__name__}: {errors[0]}"[:300] if errors else None,
        "tokens": tokens,
        "wall_s": round(wall, 3),
        "tokens_per_s": round(tokens / wall, 1) if wall else None,
        "first_token_p50_s": round(percentile(first_tokens, 0.5), 3),
        "first_token_p95_s": round(percentile(first_tokens, 0.95), 3),
        "ttft_p50_s": round(percentile(ttft, 0.5), 3),
        "ttft_p95_s": round(percentile(ttft, 0.95), 3),
    }


def show(label: str, result: dict) -> None:
    errors = f"; {result['errors']} errors, first: {result['first_error']}" if result["errors"] else ""
    steps = result.get("steps")
    step_text = (
        f"; ms per decode step by batch size {steps['ms_per_step']}, batch to first token {steps['switch_ms']} ms"
        if steps else ""
    )
    say(
        f"{label}: {result['tokens_per_s']} tokens/s ({result['tokens']} tokens in {result['wall_s']} s), "
        f"time to first token p50 {result['first_token_p50_s']} s, p95 {result['first_token_p95_s']} s, "
        f"to first text p50 {result['ttft_p50_s']} s, p95 {result['ttft_p95_s']} s{step_text}{errors}"
    )


def step_figures(timings: list[SliceTiming]) -> dict:
    """The backend's batches in one measurement: ms per decode step (weighted by steps) per batch size, and the
    mean time from building a batch to its first token."""
    steps: dict[int, list[float]] = {}
    for timing in timings:
        if timing.steps:
            total = steps.setdefault(timing.rows, [0.0, 0.0])
            total[0] += timing.step_seconds * timing.steps
            total[1] += timing.steps
    switch = [timing.switch_seconds for timing in timings]
    return {
        "ms_per_step": {rows: round(1000 * seconds / count, 2) for rows, (seconds, count) in sorted(steps.items())},
        "switch_ms": round(1000 * sum(switch) / len(switch), 1) if switch else None,
        "batches": len(timings),
    }


def measured(backend: TransformersBackend, run) -> dict:
    """``run()``'s figures with the backend's batches and step times while it ran."""
    sizes, before = backend.batch_sizes, len(backend.slice_timings)
    result = run()
    time.sleep(0.05)  # a batch's timing is kept just after its rows end
    result["batch_sizes"] = difference(backend.batch_sizes, sizes)
    result["steps"] = step_figures(list(backend.slice_timings)[before:])
    return result


def difference(after: dict, before: dict) -> dict:
    return {str(key): count - before.get(key, 0) for key, count in after.items() if count - before.get(key, 0)}


def backend_part(args, path: str, compiled: bool, out: dict) -> None:
    name = "backend" if compiled else "dynamic"
    settings = {
        "path": path,
        "device": args.device,
        "max_batch_size": args.requests,
        "compiled_decoding": compiled,
        "compile_batch_sizes": [size for size in args.batch_sizes if size <= args.requests],
        "compile_cache_lengths": args.cache_lengths,
        "compile_backend": args.compile_backend,
    }
    say(f"{name}: loading with {json.dumps({k: v for k, v in settings.items() if k != 'path'})}")
    logs = TorchLogs()  # from the warm-up on: CUDA graphs skipped (a slow decode step), recompiles
    started = time.perf_counter()
    try:
        backend = TransformersBackend(settings)
    except Exception:
        logs.close()
        raise
    load_s = time.perf_counter() - started
    figures_out: dict = {"load_s": round(load_s, 1), "device": backend.device, "dtype": backend.dtype}
    if backend.warm_up is not None:
        figures_out["warm_up"] = {"shapes": backend.warm_up.shapes, "seconds": round(backend.warm_up.seconds, 1),
                                  "gpu_memory_mib": backend.warm_up.gpu_memory_mib}
        say(f"{name}: loaded in {load_s:.1f} s; warm-up {backend.warm_up.describe()}")
    else:
        say(f"{name}: loaded in {load_s:.1f} s ({backend.device}, {backend.dtype})")
    out[name] = figures_out
    figures_out["compile_logs_at_warm_up"] = at_warm_up = logs.counts()
    if compiled:
        say(f"{name}: at the warm-up: {at_warm_up}")
        for message in logs.seen["cuda graphs skipped"]:
            say(f"{name}: warm-up: {message}")
    try:
        requests = make_requests(args.requests, args.new_tokens, args.image_size)
        shapes = backend.decoding_shapes
        figures_out["one_at_a_time"] = result = measured(backend, lambda: run_one_by_one(backend, requests[: args.single]))
        show(f"{name}: 1 request at a time ({args.single} requests)", result)
        # The first burst meets one-time costs (allocations); the figure is the median of the next three, since
        # one burst's tokens/s moved by 10% from one run to the next on the same card.
        figures_out["concurrent_first"] = result = measured(backend, lambda: run_together(backend, requests))
        show(f"{name}: {args.requests} concurrent requests (first burst), batches {result['batch_sizes']}", result)
        bursts = []
        for _ in range(CONCURRENT_BURSTS):
            bursts.append(result := measured(backend, lambda: run_together(backend, requests)))
            show(f"{name}: {args.requests} concurrent requests, batches {result['batch_sizes']}", result)
        bursts.sort(key=lambda burst: burst["tokens_per_s"])
        figures_out["concurrent"] = bursts[len(bursts) // 2]
        figures_out["concurrent_bursts_tokens_per_s"] = [burst["tokens_per_s"] for burst in bursts]
        arrivals = make_requests(int(args.rate * args.ttft_seconds), args.ttft_new_tokens, args.image_size)
        slices = [backend.batch_slice_tokens, 0] if compiled else []
        for slice_tokens in slices:
            backend.batch_slice_tokens = slice_tokens
            label = f"arrivals_slice_{slice_tokens}"
            figures_out[label] = result = measured(backend, lambda: run_arrivals(backend, arrivals, args.rate))
            show(f"{name}: {args.rate:g} requests/s for {args.ttft_seconds:g} s, {args.ttft_new_tokens} new tokens, "
                 f"batch_slice_tokens {slice_tokens}, batches {result['batch_sizes']}", result)
        figures_out["decoding_shapes"] = difference(backend.decoding_shapes, shapes)
        say(f"{name}: batches per compiled shape (None: dynamic path) {figures_out['decoding_shapes']}")
        # Serving must never compile or record again (the reasons of recompiles are printed).
        serving = {kind: count - at_warm_up[kind] for kind, count in logs.counts().items()}
        figures_out["compile_logs_while_serving"] = serving
        figures_out["recompiles_while_serving"] = serving["recompiles"]
        say(f"{name}: while serving: {serving}")
    finally:
        logs.close()
        backend.close()


class TorchLogs(logging.Handler):
    """torch.compile's logs as TORCH_LOGS=recompiles,cudagraphs prints them, counted while open by kind: a
    recompile, a graph inductor runs without CUDA graphs ("skipping cudagraphs due to ...": each kernel launched
    from Python, a slower step), a CUDA graph recorded or recorded again, a graph run eagerly by CUDA graph trees.
    After the warm-up, serving should meet none of them."""

    KINDS = {  # what a message contains -> its kind
        "Recompiling function": "recompiles",
        "skipping cudagraphs": "cuda graphs skipped",
        "Recording function": "cuda graphs recorded",
        "Re-recording function": "cuda graphs recorded again",
        "Running eager function": "run eagerly by cuda graph trees",
    }
    LOGGERS = (
        "torch._dynamo.guards.__recompiles",
        "torch._inductor.cudagraph_utils.__cudagraphs",
        "torch._inductor.cudagraph_trees.__cudagraphs",
    )

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, list[str]] = {kind: [] for kind in self.KINDS.values()}
        try:
            torch._logging.set_logs(recompiles=True, cudagraphs=True)
        except (TypeError, ValueError):  # a torch without the cudagraphs log
            torch._logging.set_logs(recompiles=True)
        for name in self.LOGGERS:
            logging.getLogger(name).addHandler(self)

    def counts(self) -> dict[str, int]:
        return {kind: len(messages) for kind, messages in self.seen.items()}

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        for marker, kind in self.KINDS.items():
            if marker in message:
                self.seen[kind].append(message[:300])
                return

    def close(self) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).removeHandler(self)
        torch._logging.set_logs()
        super().close()


def raw_part(args, path: str, out: dict) -> None:
    """The same rows, left-padded by the processor, through one generate() per batch, on the decode thread."""
    logs = TorchLogs()
    try:
        run_on_decode_thread(lambda: raw_generates(args, path, out))
    finally:
        run_on_decode_thread(torch.compiler.reset)  # its CUDA graphs and compiled code: not needed any more
        logs.close()
        out.setdefault("raw", {})["compile_logs"] = counts = logs.counts()
        say(f"raw generate: {counts}")


def raw_generates(args, path: str, out: dict) -> None:
    from transformers import AutoModelForImageTextToText, AutoProcessor

    device = "cuda" if args.device in ("auto", "cuda") and torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    processor = AutoProcessor.from_pretrained(path, local_files_only=True)
    model = AutoModelForImageTextToText.from_pretrained(path, local_files_only=True, dtype=dtype).to(device).eval()
    requests = make_requests(args.requests, args.new_tokens, args.image_size)
    figures_out: dict = {}
    out["raw"] = figures_out
    for rows in sorted({1, args.requests}):
        # A fresh compile per batch size: on torch 2.11 the batch of 32 after the batch of 1 re-recorded its CUDA
        # graphs at every step and then failed an assertion in cudagraph trees (the static cache is per call).
        torch.compiler.reset()
        chosen = requests[:rows]
        texts, images = [], []
        for request in chosen:
            parts = request.messages[0].content
            conversation = [{"role": "user", "content": [
                {"type": "image"} if isinstance(part, ImagePart) else {"type": "text", "text": part} for part in parts
            ]}]
            texts.append(processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False))
            images += [part.to_pil() for part in parts if isinstance(part, ImagePart)]
        inputs = processor(text=texts, images=images or None, return_tensors="pt", padding=True,
                           padding_side="left", add_special_tokens=False).to(device)
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(dtype)
        for cache in ("dynamic", "static"):
            options = {"cache_implementation": "static"} if cache == "static" else {}
            label = f"{cache}_{rows}"
            if cache == "static":  # the first call of a shape compiles: timed apart
                if rows > 1 and elapsed() > args.budget_seconds - RAW_COMPILE_SECONDS:
                    say(f"raw generate, {cache} cache, batch {rows}: skipped, it would not end within "
                        f"--budget-seconds {args.budget_seconds:g}")
                    figures_out[label] = "skipped: time budget"
                    continue
                first = timed_generate(model, inputs, args.new_tokens, options)
                figures_out[f"{label}_first_call_s"] = round(first.seconds, 1)
                say(f"raw generate, {cache} cache, batch {rows}: first call (compiling) {first.seconds:.1f} s")
            run = timed_generate(model, inputs, args.new_tokens, options)
            figures_out[label] = {"tokens": run.tokens, "wall_s": round(run.seconds, 3),
                                  "tokens_per_s": round(run.tokens / run.seconds, 1),
                                  "first_token_ms": round(1000 * run.first_token_seconds, 1),
                                  "ms_per_step": round(1000 * run.step_seconds, 2)}
            say(f"raw generate, {cache} cache, batch {rows}: {run.tokens / run.seconds:.0f} tokens/s, "
                f"first token after {1000 * run.first_token_seconds:.1f} ms, {1000 * run.step_seconds:.2f} ms per "
                "decode step after it")
    del model


# The longest a raw static first call (a compile) took on an H200: 33 s for a batch of 32 (the issue).
RAW_COMPILE_SECONDS = 40


class Stamps:
    """A streamer that only notes when each put came (the prompt, then one per token): transformers' generate
    copies the tokens to the CPU for it, as for the backend's streamer."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def put(self, value) -> None:
        self.times.append(time.perf_counter())

    def end(self) -> None:
        pass


class Timed(NamedTuple):
    tokens: int
    seconds: float
    first_token_seconds: float  # from the call to the first token (prefill included)
    step_seconds: float  # per decode step after the first token


def timed_generate(model, inputs: dict, new_tokens: int, options: dict) -> Timed:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    stamps = Stamps()
    started = time.perf_counter()
    with torch.inference_mode():
        output = model.generate(**inputs, max_new_tokens=new_tokens, do_sample=False, streamer=stamps, **options)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    tokens = stamps.times[1:]  # after the prompt
    steps = (tokens[-1] - tokens[0]) / (len(tokens) - 1) if len(tokens) > 1 else 0.0
    generated = (output.shape[1] - inputs["input_ids"].shape[1]) * output.shape[0]
    return Timed(generated, seconds, tokens[0] - started if tokens else seconds, steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--tiny", action="store_true", help="the tiny checkpoint (CPU runs, CI)")
    parser.add_argument("--path", help="a checkpoint of your own instead of a built one")
    parser.add_argument("--quick", action="store_true", help="16 requests of 64 tokens, arrivals for 5 s")
    parser.add_argument("--requests", type=int, help="concurrent requests (default 32; --quick 16, --tiny 8)")
    parser.add_argument("--new-tokens", type=int, help="new tokens per request (default 128; --quick 64, --tiny 24)")
    parser.add_argument("--single", type=int, help="requests run one at a time (default 3; --quick, --tiny 2)")
    parser.add_argument("--rate", type=float, help="arrivals per second (default 20; --tiny 10)")
    parser.add_argument("--ttft-seconds", type=float, help="how long requests arrive (default 10; --quick 5, --tiny 2)")
    parser.add_argument("--ttft-new-tokens", type=int, help="new tokens per arriving request (default 64; --tiny 16)")
    parser.add_argument("--batch-sizes", default="1,2,4,8,16,32", help="compile_batch_sizes (up to --requests)")
    parser.add_argument("--cache-lengths", default="512", help="compile_cache_lengths (default 512)")
    parser.add_argument("--compile-backend", help='default "inductor" on a GPU, "eager" on the CPU')
    parser.add_argument("--parts", default=",".join(PARTS), help=f"which parts, in order (default {','.join(PARTS)})")
    parser.add_argument("--json", help="write the figures here (rewritten after each part)")
    parser.add_argument("--budget-seconds", type=float, default=165,
                        help="skip what would end after this many seconds from the start (default 165)")
    args = parser.parse_args()
    sizes = SIZES["tiny" if args.tiny else "quick" if args.quick else "full"]
    for name, value in sizes.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.batch_sizes = [int(size) for size in args.batch_sizes.split(",")]
    args.cache_lengths = [int(length) for length in args.cache_lengths.split(",")]
    cuda = args.device != "cpu" and torch.cuda.is_available()
    args.compile_backend = args.compile_backend or ("inductor" if cuda else "eager")
    if not cuda:  # on the CPU (CI) the backend compiles with torch.compile's eager backend, as its tests do
        compiled_decoding.TESTS_COMPILE_ON_CPU = True
    parts = [part for part in args.parts.split(",") if part]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s) {', '.join(sorted(unknown))}; known: {', '.join(PARTS)}")

    out: dict = {"args": vars(args), "torch": torch.__version__, "device_name": _device_name(cuda)}
    import transformers

    out["transformers"] = transformers.__version__
    say(f"torch {torch.__version__}, transformers {transformers.__version__}, {out['device_name']}")

    def save() -> None:
        if args.json:
            with open(args.json, "w") as handle:
                json.dump(out, handle, indent=2, default=str)

    with tempfile.TemporaryDirectory() as tmp:
        path = args.path or build(args, tmp, cuda)
        args.image_size = 224 if not args.tiny else 32
        for part in parts:
            if part == "dynamic" and elapsed() > args.budget_seconds - DYNAMIC_PART_SECONDS:
                say(f"dynamic: skipped, it would not end within --budget-seconds {args.budget_seconds:g}")
                out["dynamic"] = {"skipped": "time budget"}
                continue
            try:
                if part == "raw":
                    raw_part(args, path, out)
                else:
                    backend_part(args, path, compiled=part == "backend", out=out)
            except Exception as exc:  # the other parts still run
                say(f"{part} failed: {type(exc).__name__}: {exc}")
                traceback.print_exc()
                out.setdefault(part, {})["failed"] = f"{type(exc).__name__}: {exc}"
            save()
            if cuda:
                torch.cuda.empty_cache()
    summary(out)


DYNAMIC_PART_SECONDS = 12  # on an H200: loading 0.4 s, one at a time 5.4 s, 32 concurrent 2 s


def summary(out: dict) -> None:
    """The issue's targets beside what this run measured (where it measured them)."""
    compiled = out.get("backend", {})
    rate = out["args"]["rate"]
    lines = [
        ("1 request, tokens/s", compiled.get("one_at_a_time", {}).get("tokens_per_s"), ">= 250"),
        (f"{out['args']['requests']} concurrent, tokens/s", compiled.get("concurrent", {}).get("tokens_per_s"), ">= 5000"),
        ("warm-up, s", compiled.get("warm_up", {}).get("seconds"), "<= 180"),
        ("recompiles while serving", compiled.get("recompiles_while_serving"), "0"),
    ]
    for key in sorted(key for key in compiled if key.startswith("arrivals_slice_")):
        lines.append((f"time to first token p95 at {rate:g}/s, {key[9:].replace('_', ' ')}",
                      compiled[key].get("first_token_p95_s"), "<= 0.5"))
        lines.append((f"time to first text p95 at {rate:g}/s, {key[9:].replace('_', ' ')}",
                      compiled[key].get("ttft_p95_s"), "<= 0.5 (a word later)"))
    raw = out.get("raw", {})
    for rows in sorted({1, out["args"]["requests"]}):
        backend_steps = compiled.get("one_at_a_time" if rows == 1 else "concurrent", {}).get("steps", {})
        static = raw.get(f"static_{rows}")
        lines.append((f"ms per decode step, batch {rows}: backend / raw static",
                      f"{backend_steps.get('ms_per_step', {}).get(rows)} / "
                      f"{static.get('ms_per_step') if isinstance(static, dict) else static}", "equal"))
    say("summary (compiled decoding; targets for the ~0.8B checkpoint on an H100/H200):")
    for label, value, target in lines:
        say(f"  {label}: {value if value is not None else 'not measured'} (target {target})")


def build(args, tmp: str, cuda: bool) -> str:
    from models_runtime.tiny import build_mid_llava, build_tiny_llava

    say(f"building the {'tiny' if args.tiny else '~0.8B-parameter'} random checkpoint")
    if args.tiny:
        path = build_tiny_llava(os.path.join(tmp, "tiny-llava"))
    else:
        path = build_mid_llava(os.path.join(tmp, "mid-llava"), device="cuda" if cuda else "cpu")
    say(f"built: {sum(entry.stat().st_size for entry in os.scandir(path)) / 2**20:.0f} MiB on disk")
    return path


def _device_name(cuda: bool) -> str:
    return torch.cuda.get_device_name() if cuda else "CPU"


if __name__ == "__main__":
    main()
