"""The transformers backend on tiny random-weight checkpoints, loaded through the real from_pretrained path."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter

import pytest
import torch

from models_runtime import (
    GenerationSettings,
    ImagePart,
    Message,
    ModelRequest,
    PermanentModelError,
)
from models_runtime.backends.transformers import TransformersBackend
from models_runtime.registry import get_backend
from tests.models_runtime.helpers import together


def ask(text: str, *images, **generation) -> ModelRequest:
    content = (*(ImagePart(image) for image in images), text)
    generation.setdefault("max_new_tokens", 24)
    return ModelRequest(
        messages=(Message.text("system", "Answer briefly."), Message("user", content)),
        settings=GenerationSettings(**generation),
    )


@pytest.fixture(scope="module")
def llava(tiny_llava_path) -> TransformersBackend:
    backend = TransformersBackend({"path": tiny_llava_path, "device": "cpu"})
    yield backend
    backend.close()


def test_tiny_checkpoints_are_small(tiny_llava_path, tiny_causal_path):
    for path in (tiny_llava_path, tiny_causal_path):
        size = sum(entry.stat().st_size for entry in os.scandir(path))
        assert size < 3_000_000, (path, size)


def test_llava_streams_text_only(llava):
    stream = llava.stream(ask("What is shown?"))

    chunks = list(stream)

    assert (llava.device, llava.dtype, llava.multimodal) == ("cpu", "float32", True)
    assert chunks and "".join(chunks) == stream.result.text
    assert stream.result.text.strip()
    assert stream.result.prompt_tokens > 5
    assert 1 <= stream.result.completion_tokens <= 24
    assert stream.result.time_to_first_token <= stream.result.latency


def test_llava_takes_an_image_through_the_processor(llava, png_bytes):
    text_only = llava.stream(ask("What is shown?")).collect()

    stream = llava.stream(ask("What is shown?", png_bytes))
    chunks = list(stream)

    assert "".join(chunks) == stream.result.text
    # The processor expands <image> to one token per vision patch: (32 / 8) ** 2 = 16.
    assert stream.result.prompt_tokens - text_only.prompt_tokens >= 16
    assert 1 <= stream.result.completion_tokens <= 24


def test_greedy_is_deterministic_and_sampling_follows_the_seed(llava, png_bytes):
    greedy = [llava.stream(ask("Count the shapes.", png_bytes)).collect().text for _ in range(2)]
    sampled = [
        llava.stream(ask("Count the shapes.", temperature=1.0, top_p=0.9, seed=7)).collect().text
        for _ in range(2)
    ]

    assert greedy[0] == greedy[1]
    assert sampled[0] == sampled[1]


def test_max_new_tokens_is_honoured(llava):
    result = llava.stream(ask("Tell me everything.", max_new_tokens=3)).collect()

    assert 1 <= result.completion_tokens <= 3


def test_text_is_cut_at_a_stop_string(llava):
    full = llava.stream(ask("What is shown?", max_new_tokens=32)).collect().text
    assert len(full) > 12, full
    stop = full[6:9]  # some text from the middle of the greedy answer
    expected = full[: full.find(stop)]

    stream = llava.stream(ask("What is shown?", max_new_tokens=32, stop=[stop]))
    chunks = list(stream)

    assert stream.result.text == "".join(chunks) == expected


def test_an_abandoned_stream_does_not_block_the_next_request(llava):
    first = llava.stream(ask("First question.", max_new_tokens=32))
    for _chunk in first:
        break  # the caller walks away mid-answer
    first.close()

    result = llava.stream(ask("Second question.", max_new_tokens=8)).collect()

    assert first.result is None
    assert 1 <= result.completion_tokens <= 8


def test_four_concurrent_requests_get_the_same_answers_as_sequential_ones(tiny_llava_path, png_bytes):
    backend = get_backend("transformers", {"path": tiny_llava_path, "device": "cpu"})
    requests = [
        ask(f"Question number {index}?", *([png_bytes] if index % 2 else []), max_new_tokens=16)
        for index in range(4)
    ]
    expected = [backend.stream(request).collect().text for request in requests]
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            same_backend = get_backend("transformers", {"device": "cpu", "path": tiny_llava_path})
            assert same_backend is backend
            stream = same_backend.stream(requests[index])
            results[index] = "".join(stream)
            assert results[index] == stream.result.text
        except BaseException as exc:  # reported below, in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert [results[index] for index in range(4)] == expected


def test_text_only_checkpoint_falls_back_to_a_causal_lm(tiny_causal_path, png_bytes):
    # device "auto": the GPU where there is one (compiling is not what this test is about)
    backend = TransformersBackend({"path": tiny_causal_path, "compiled_decoding": False})

    stream = backend.stream(ask("Hello?", max_new_tokens=10))
    chunks = list(stream)

    expected = ("cuda", "bfloat16") if torch.cuda.is_available() else ("cpu", "float32")
    assert (backend.device, backend.dtype, backend.multimodal) == (*expected, False)
    assert "".join(chunks) == stream.result.text
    assert stream.result.prompt_tokens > 3 and 1 <= stream.result.completion_tokens <= 10
    with pytest.raises(PermanentModelError, match="text-only.*1 image"):
        backend.stream(ask("What is shown?", png_bytes)).collect()


def test_missing_path_is_a_permanent_error_naming_it(tmp_path):
    missing = tmp_path / "no-such-model"

    with pytest.raises(PermanentModelError, match=str(missing)):
        TransformersBackend({"path": str(missing)})
    with pytest.raises(PermanentModelError, match='"path"'):
        TransformersBackend({})


@pytest.mark.parametrize(
    "config_text", [None, "{not json", json.dumps({"model_type": "no-such-architecture"})]
)
def test_bad_checkpoint_is_a_permanent_error_naming_the_path(tmp_path, config_text):
    if config_text is not None:
        (tmp_path / "config.json").write_text(config_text)

    with pytest.raises(PermanentModelError, match=f"cannot load a transformers model from {tmp_path}"):
        TransformersBackend({"path": str(tmp_path)})


def test_checkpoint_without_weights_is_a_permanent_error(tiny_causal_path, tmp_path):
    for name in os.listdir(tiny_causal_path):
        if not name.endswith(".safetensors"):
            (tmp_path / name).write_bytes((open(os.path.join(tiny_causal_path, name), "rb")).read())

    with pytest.raises(PermanentModelError, match=str(tmp_path)):
        TransformersBackend({"path": str(tmp_path)})


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"dtype": "int3"}, "unknown dtype"),
        ({"device": "tpu"}, "unknown device"),
        ({"revision": "main"}, "unknown transformers setting"),
    ],
)
def test_bad_settings(tiny_causal_path, settings, message):
    with pytest.raises(PermanentModelError, match=message):
        TransformersBackend({"path": tiny_causal_path, **settings})


def test_close_frees_the_model(tiny_causal_path):
    backend = TransformersBackend({"path": tiny_causal_path, "compiled_decoding": False})

    backend.close()

    assert backend.model is None
    with pytest.raises(PermanentModelError, match="closed"):
        backend.stream(ask("Hello?")).collect()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error")
def test_asking_for_cuda_without_a_gpu_is_a_permanent_error(tiny_causal_path):
    with pytest.raises(PermanentModelError, match="CUDA is not available"):
        TransformersBackend({"path": tiny_causal_path, "device": "cuda"})


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_auto_picks_cuda_and_bfloat16_and_serves_four_concurrent_requests(tiny_llava_path, png_bytes):
    # One cache length keeps the compiling short: batch sizes 1, 2 and 4 at 256 tokens.
    settings = {"path": tiny_llava_path, "max_batch_size": 4, "batch_wait_ms": 2000, "compile_cache_lengths": [256]}
    backend = get_backend("transformers", settings)
    assert (backend.device, backend.dtype) == ("cuda", "bfloat16")
    assert backend.compiled_decoding.startswith("on: 3 shapes compiled"), backend.compiled_decoding
    assert next(backend.model.parameters()).device.type == "cuda"
    assert next(backend.model.parameters()).dtype == torch.bfloat16
    requests = [
        ask(f"Question {index}?", *([png_bytes] if index % 2 else []), max_new_tokens=16) for index in range(4)
    ]
    def read(_index, stream):
        assert "".join(stream) == stream.result.text
        return stream.result

    at_load = Counter(backend.batch_sizes)  # the first request of each kind is served once at load (warm-up)
    results = together(backend, requests, read)
    assert not [result for result in results if isinstance(result, BaseException)]
    assert Counter(backend.batch_sizes) - at_load == {4: 1}  # one bf16 batch of 4 on the GPU
    assert all(result is not None and 1 <= result.completion_tokens <= 16 for result in results)
    assert results[1].prompt_tokens - results[0].prompt_tokens >= 16  # the image rows kept their image tokens
    assert backend.decoding_shapes == {(4, 256): 1}  # compiled decoding is on by default with CUDA
    # Each row is still a sensible answer on its own: run alone on the dynamic path, the greedy text is the same
    # or, since bf16 matmuls over a padded batch may round differently, at least starts the same way.
    one = TransformersBackend({"path": tiny_llava_path, "max_batch_size": 1, "compiled_decoding": False})
    try:
        for request, batched in zip(requests, results, strict=True):
            single = one.stream(request).collect()
            assert single.prompt_tokens == batched.prompt_tokens
            assert single.text[:4] == batched.text[:4]
    finally:
        one.close()
