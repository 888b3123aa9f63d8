"""Dynamic batching in the transformers backend: throughput and latency per max_batch_size.

C client threads (as a Celery worker with ``-P threads -c C`` would have) send R requests, each with a small
image, to one TransformersBackend; for each max_batch_size it prints wall time, requests/s, generated
tokens/s, time to first chunk and total latency (p50/p95), and the batch sizes actually run.
By default the tiny random-weight LLaVA is built into a temporary directory (nothing is downloaded); its
answers are gibberish and mostly run to --max-new-tokens, which is what a throughput test wants.

Needs only torch, transformers and Pillow (no Django), so it also runs outside the project's venv:

    python3 benchmarks/transformers_batching.py --requests 32 --max-new-tokens 32
    python3 benchmarks/transformers_batching.py --path /models/Qwen2-VL-2B-Instruct --device cuda
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.figures import percentile  # noqa: E402
from models_runtime import GenerationSettings, ImagePart, Message, ModelRequest  # noqa: E402
from models_runtime.backends.transformers import TransformersBackend  # noqa: E402

QUESTIONS = [
    "What is shown in the image?",
    "Count the objects in the picture and give a number.",
    "Which colour is the square? Answer with the letter of the correct option: A red, B blue, C green.",
    "Look at the picture again and think about the shapes once more. What do you see?",
]


def png(index: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    colour = ((index * 53) % 256, (index * 101) % 256, (index * 197) % 256)
    Image.new("RGB", (48, 40), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def request(index: int, max_new_tokens: int) -> ModelRequest:
    text = f"Question {index}. {QUESTIONS[index % len(QUESTIONS)]}"
    return ModelRequest(
        messages=(Message("user", (ImagePart(png(index)), text)),),
        settings=GenerationSettings(max_new_tokens=max_new_tokens),
    )


def run(backend: TransformersBackend, requests: list[ModelRequest], concurrency: int) -> dict:
    results: list = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    todo = iter(range(len(requests)))

    def client() -> None:
        while True:
            with lock:
                index = next(todo, None)
            if index is None:
                return
            try:
                result = backend.stream(requests[index]).collect()
            except BaseException as exc:
                with lock:
                    errors.append(exc)
                continue
            with lock:
                results.append(result)

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    if errors:
        raise errors[0]
    return {"wall": wall, "results": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", help="a local checkpoint (default: build the tiny LLaVA in a temp dir)")
    parser.add_argument("--batch-sizes", default="1,4,8,16", help="max_batch_size values (default 1,4,8,16)")
    parser.add_argument("--concurrency", type=int, default=16, help="client threads (default 16)")
    parser.add_argument("--requests", type=int, default=64, help="requests per setting (default 64)")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--batch-wait-ms", type=float, default=5)
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--dtype", choices=("auto", "bfloat16", "float32"), default="auto")
    args = parser.parse_args()
    sizes = [int(size) for size in args.batch_sizes.split(",")]

    with tempfile.TemporaryDirectory() as tmp:
        path = args.path
        if not path:
            from models_runtime.tiny import build_tiny_llava

            path = build_tiny_llava(os.path.join(tmp, "tiny-llava"))
        requests = [request(index, args.max_new_tokens) for index in range(args.requests)]
        print(
            f"{args.requests} requests from {args.concurrency} threads, max_new_tokens {args.max_new_tokens}, "
            f"batch_wait_ms {args.batch_wait_ms}, one image each; model {args.path or 'tiny LLaVA (random weights)'}"
        )
        header = (
            f"{'max_batch':>9} {'device':>6} {'dtype':>8} {'wall s':>7} {'req/s':>7} {'tok/s':>8} "
            f"{'ttfc p50/p95 ms':>16} {'latency p50/p95 ms':>19}  batches run (size x count)"
        )
        print(header)
        for size in sizes:
            backend = TransformersBackend(
                {
                    "path": path,
                    "device": args.device,
                    "dtype": args.dtype,
                    "max_batch_size": size,
                    "batch_wait_ms": args.batch_wait_ms,
                }
            )
            try:
                backend.stream(requests[0]).collect()  # warm-up, not counted
                warm = backend.batch_sizes
                figures = run(backend, requests, args.concurrency)
                batches = {
                    batch: count - warm.get(batch, 0)
                    for batch, count in sorted(backend.batch_sizes.items(), reverse=True)
                    if count - warm.get(batch, 0)
                }
            finally:
                backend.close()
            results, wall = figures["results"], figures["wall"]
            tokens = sum(result.completion_tokens or 0 for result in results)
            ttfc = [1000 * (result.time_to_first_token or result.latency) for result in results]
            latency = [1000 * result.latency for result in results]
            print(
                f"{size:>9} {backend.device:>6} {backend.dtype:>8} {wall:>7.2f} {len(results) / wall:>7.1f} "
                f"{tokens / wall:>8.0f} {percentile(ttfc, 0.5):>7.0f}/{percentile(ttfc, 0.95):<8.0f} "
                f"{percentile(latency, 0.5):>9.0f}/{percentile(latency, 0.95):<9.0f}  "
                + ", ".join(f"{batch}x{count}" for batch, count in batches.items())
            )


if __name__ == "__main__":
    main()
