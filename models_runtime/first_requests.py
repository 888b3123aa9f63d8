"""The first requests a freshly loaded GPU model serves, run at load instead of in someone's round.

The first prefill of each kind of prompt pays for lazy CUDA set-up that compiling the decode step does not touch
(the vision tower's first run, cuBLAS handles and kernels for the prefill's shapes): on an H200 the first round of
the ~0.8B checkpoint waited 0.5 s for its first token, the next ones 0.09 s (benchmarks/gpu_serving.py). So the
worker serves one short text request, and one with an image where the model takes images, before any round.
"""

from __future__ import annotations

import io
import logging
import time
from typing import Protocol

from models_runtime.base import GenerationSettings, ImagePart, Message, ModelError, ModelRequest, Stream

logger = logging.getLogger(__name__)

PROMPT = "Describe what you see in one word."


class Serving(Protocol):
    multimodal: bool

    def stream(self, request: ModelRequest) -> Stream: ...


def _image() -> ImagePart:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (224, 224), "white").save(buffer, format="PNG")
    return ImagePart(buffer.getvalue())


def serve_first_requests(backend: Serving) -> float:
    """Serve the first request of each kind through the backend's own path; the seconds it took. A failure is
    logged, never raised: a real round meets the same error and reports it as usual."""
    started = time.perf_counter()
    contents: list[tuple[str | ImagePart, ...]] = [(PROMPT,)]
    if backend.multimodal:
        contents.append((_image(), PROMPT))
    for content in contents:
        request = ModelRequest(messages=(Message("user", content),), settings=GenerationSettings(max_new_tokens=2))
        try:
            for _ in backend.stream(request):
                pass
        except ModelError as exc:  # e.g. an empty answer from two tokens of a random model: nothing to warn of
            logger.debug("first request at load: %s", exc)
    seconds = time.perf_counter() - started
    logger.info("first requests served at load in %.2f s", seconds)
    return seconds
