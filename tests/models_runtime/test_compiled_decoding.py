"""Compiled decoding in the transformers backend: which shape a batch takes, the fall-back to the dynamic path, and
the same answers as without compiling. On the CPU torch.compile runs its "eager" backend (tracing, guards and
recompiles as with inductor, no code generation), so these tests take seconds; the CUDA tests use inductor.
transformers compiles on the CPU only for tests (``compiling_on_cpu``)."""

from __future__ import annotations

import contextlib
import threading

import pytest
import torch
from transformers import CompileConfig, LlavaForConditionalGeneration

from models_runtime import GenerationSettings, ImagePart, Message, ModelRequest, PermanentModelError
from models_runtime.backends.transformers import TransformersBackend
from models_runtime.compiled_decoding import Buckets, CompileSettings, Plan, Shape, default_batch_sizes
from models_runtime.decode_thread import THREAD_NAME
from models_runtime.settings import SettingsReader
from tests.models_runtime.helpers import together
from tests.runtime_fixtures import compiling_on_cpu

COMPILED = {"device": "cpu", "compiled_decoding": True, "compile_backend": "eager"}


def ask(text: str, *images, **generation) -> ModelRequest:
    generation.setdefault("max_new_tokens", 12)
    return ModelRequest(
        messages=(Message("user", (*(ImagePart(image) for image in images), text)),),
        settings=GenerationSettings(**generation),
    )


def summary(results) -> list[tuple]:
    return [(result.text, result.prompt_tokens, result.completion_tokens) for result in results]


def grew(after: dict, before: dict) -> dict:
    """What a counter gained since ``before``."""
    return {key: count - before.get(key, 0) for key, count in after.items() if count != before.get(key, 0)}


@contextlib.contextmanager
def no_recompiles():
    """torch.compile raises instead of compiling again: serving after the warm-up must never need to."""
    torch.compiler.set_stance("fail_on_recompile")
    try:
        yield
    finally:
        torch.compiler.set_stance("default")


# -- the plan: which shape a batch takes ---------------------------------------------------------------------

BUCKETS = Buckets(batch_sizes=(1, 2, 4, 8), cache_lengths=(128, 256))


@pytest.mark.parametrize(
    ("rows", "width", "new_tokens", "longest", "plan"),
    [
        (1, 50, 20, 70, Plan(Shape(1, 128), 20)),
        (3, 50, 20, 70, Plan(Shape(4, 128), 20)),  # three rows padded to four
        (5, 100, 28, 128, Plan(Shape(8, 128), 28)),  # exactly fills the smaller cache
        (5, 100, 29, 129, Plan(Shape(8, 256), 29)),
        (8, 200, 100, 256, Plan(Shape(8, 256), 56)),  # a row that went on widens the batch: stop at 256
        (9, 50, 20, 70, Plan(None, 20)),  # more rows than any compiled batch: dynamic
        (2, 200, 60, 260, Plan(None, 60)),  # a row needs more than the largest cache: dynamic
    ],
)
def test_a_batch_takes_the_smallest_shape_that_holds_it(rows, width, new_tokens, longest, plan):
    assert BUCKETS.plan(rows, width, new_tokens, longest) == plan


def test_every_shape_is_warmed_up_the_two_smallest_batches_first():
    assert BUCKETS.warm_up_order() == [
        (1, 128), (2, 128), (4, 128), (8, 128), (1, 256), (2, 256), (4, 256), (8, 256)
    ]


@pytest.mark.parametrize(
    ("max_batch_size", "sizes"), [(1, (1,)), (8, (1, 2, 4, 8)), (12, (1, 2, 4, 8, 12)), (32, (1, 2, 4, 8, 16, 32))]
)
def test_default_batch_sizes_are_powers_of_two_up_to_the_largest_batch(max_batch_size, sizes):
    assert default_batch_sizes(max_batch_size) == sizes


# -- settings ---------------------------------------------------------------------------------------------


def read(device: str = "cpu", max_batch_size: int = 8, **settings) -> CompileSettings | None:
    return CompileSettings.read(SettingsReader("transformers", settings), device=device, max_batch_size=max_batch_size)


def test_compiling_is_off_by_default_on_the_cpu_and_on_with_cuda():
    assert read() is None and read(compiled_decoding=False, device="cuda") is None
    on = read(device="cuda")
    assert on == CompileSettings(Buckets((1, 2, 4, 8), (1024, 2048)), "inductor", asked=False)
    asked = read(device="cuda", compiled_decoding=True, compile_batch_sizes=[4, 1], compile_cache_lengths=[512],
                 compile_backend="eager")
    assert asked == CompileSettings(Buckets((1, 4), (512,)), "eager", asked=True)


def test_compiled_decoding_asked_for_on_the_cpu_is_refused():
    """transformers would skip compiling there (with a warning) and serve a static cache uncompiled."""
    with pytest.raises(PermanentModelError, match='"compiled_decoding" true needs a CUDA device \\(device is "cpu"\\)'):
        read(compiled_decoding=True)


def test_transformers_still_has_the_flag_these_tests_compile_on_the_cpu_with():
    """If this fails, transformers changed how it decides to compile: the CPU tests of compiled decoding would no
    longer compile anything (test_a_failing_compile_fails_the_load_when_asked_for fails too). Find its new way,
    in CompiledDecoding.__init__ and tests/runtime_fixtures.py, or run these tests on a GPU only."""
    assert hasattr(CompileConfig, "_compile_all_devices"), "transformers' CompileConfig._compile_all_devices is gone"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"compiled_decoding": "yes"}, 'setting "compiled_decoding" must be true, false or "auto", got \'yes\''),
        ({"compile_batch_sizes": []}, 'setting "compile_batch_sizes" must be a non-empty list of integers >= 1'),
        ({"compile_batch_sizes": [0, 2]}, 'setting "compile_batch_sizes" must be a non-empty list of integers >= 1'),
        ({"compile_batch_sizes": ["2"]}, 'setting "compile_batch_sizes" must be a non-empty list of integers >= 1'),
        ({"compile_batch_sizes": [16]}, '"compile_batch_sizes" has 16, more than max_batch_size (8)'),
        ({"compile_cache_lengths": 512}, 'setting "compile_cache_lengths" must be a non-empty list of integers'),
        ({"compile_cache_lengths": [8]}, 'setting "compile_cache_lengths" must be a non-empty list of integers >= 16'),
        ({"compile_backend": "fast"}, 'setting "compile_backend" must be a torch.compile backend'),
        ({"batch_slice_tokens": -1}, 'setting "batch_slice_tokens" must be an integer >= 0, got -1'),
    ],
)
def test_bad_compile_settings_are_refused_even_with_compiling_off(tiny_causal_path, settings, message):
    with pytest.raises(PermanentModelError) as caught:
        TransformersBackend({"path": tiny_causal_path, "device": "cpu", **settings})

    assert message in str(caught.value)


# -- the backend, compiled on the CPU --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def llava_pair(tiny_llava_path):
    """The same checkpoint without and with compiled decoding (batch sizes 1, 2, 4 at cache lengths 96, 192)."""
    settings = {"path": tiny_llava_path, "max_batch_size": 4, "batch_wait_ms": 2000}
    dynamic = TransformersBackend({**settings, "device": "cpu"})
    with compiling_on_cpu():
        compiled = TransformersBackend({**settings, **COMPILED, "compile_cache_lengths": [96, 192]})
    yield dynamic, compiled
    dynamic.close()
    compiled.close()


def test_every_shape_is_compiled_when_the_model_loads(llava_pair):
    dynamic, compiled = llava_pair

    assert dynamic.compiled_decoding == "off" and dynamic.warm_up is None
    assert compiled.warm_up.shapes == 6 and compiled.warm_up.seconds > 0
    assert compiled.warm_up.gpu_memory_mib is None  # on the CPU
    assert compiled.compiled_decoding == f"on: 6 shapes compiled in {compiled.warm_up.seconds:.1f} s"


def test_compiled_batches_give_the_answers_of_the_dynamic_path_without_compiling_again(llava_pair, png_bytes):
    dynamic, compiled = llava_pair
    requests = [ask("Hi?"), ask("What is shown in the image?", png_bytes), ask("Count them.", png_bytes)]
    expected = together(dynamic, requests)
    before = compiled.decoding_shapes

    with no_recompiles():
        batched = together(compiled, requests)
        alone = [compiled.stream(request).collect() for request in requests]

    assert summary(batched) == summary(alone) == summary(expected)
    assert compiled.batch_sizes[3] == 1  # three rows, padded to the compiled batch size 4:
    assert grew(compiled.decoding_shapes, before) == {Shape(4, 96): 1, Shape(1, 96): 3}


def test_a_batch_that_fits_no_shape_runs_the_dynamic_path(llava_pair, png_bytes):
    dynamic, compiled = llava_pair
    long = ask("What is shown in the image?", png_bytes, max_new_tokens=170)  # 35 + 170 tokens: over 192
    expected = dynamic.stream(long).collect()
    before = compiled.decoding_shapes.get(None, 0)

    with no_recompiles():
        result = compiled.stream(long).collect()

    assert summary([result]) == summary([expected])
    assert compiled.decoding_shapes[None] == before + 1


def test_rows_that_share_too_little_cache_stop_early_and_go_on(llava_pair, png_bytes):
    """Left padding makes rows share cache positions: an image row of 35 tokens (100 more to come) beside a text
    row of 11 (180 more) needs 35 + 180 > 192 of them. Each row alone fits, so the batch stops when the cache is
    full (157 tokens) and the text row goes on in a batch of its own."""
    dynamic, compiled = llava_pair
    requests = [ask("What is shown in the image?", png_bytes, max_new_tokens=100), ask("Why?", max_new_tokens=180)]
    expected = together(dynamic, requests)
    sizes, shapes = compiled.batch_sizes, compiled.decoding_shapes

    with no_recompiles():
        results = together(compiled, requests)

    assert summary(results) == summary(expected)
    assert [(result.prompt_tokens, result.completion_tokens) for result in results] == [(35, 100), (11, 180)]
    assert grew(compiled.batch_sizes, sizes) == {1: 1, 2: 1}
    assert grew(compiled.decoding_shapes, shapes) == {Shape(2, 192): 1, Shape(1, 192): 1}


def test_a_failing_compile_fails_the_load_when_asked_for(tiny_causal_path, monkeypatch, compile_on_cpu):
    def failing_compile(*args, **kwargs):
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(torch, "compile", failing_compile)  # transformers compiles the decode step with it

    with pytest.raises(PermanentModelError, match=r"compiled decoding failed for .*tiny-causal.*no compiler here"):
        TransformersBackend({"path": tiny_causal_path, **COMPILED, "compile_cache_lengths": [64]})


def test_a_compiled_backend_waits_longer_for_a_batch_to_gather(tiny_causal_path, compile_on_cpu):
    """Its steps are fast: a request that misses a batch by a few milliseconds waits for many of them."""
    backend = TransformersBackend({"path": tiny_causal_path, **COMPILED, "compile_batch_sizes": [1],
                                   "compile_cache_lengths": [64]})
    try:
        assert backend.batch_wait_ms == 10 and backend._scheduler.wait_seconds == 0.01
    finally:
        backend.close()


# -- one decode thread -----------------------------------------------------------------------------------------


@pytest.fixture
def generate_threads(monkeypatch) -> list[str]:
    """The name of the thread each LLaVA generate() runs on."""
    names: list[str] = []
    generate = LlavaForConditionalGeneration.generate

    def recorded(self, *args, **kwargs):
        names.append(threading.current_thread().name)
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(LlavaForConditionalGeneration, "generate", recorded)
    return names


def serve_twice_reloaded(tiny_llava_path, settings, png_bytes) -> list[TransformersBackend]:
    """Load, serve and release the model, then load it again (a changed config, a worker that reloaded it) and
    serve again: the second model compiles and serves too, none falls back to the dynamic path."""
    requests = [ask("Hi?"), ask("What is shown in the image?", png_bytes)]
    backends = []
    for _ in range(2):
        backend = TransformersBackend({"path": tiny_llava_path, "max_batch_size": 2, "batch_wait_ms": 2000,
                                       "compiled_decoding": True, "compile_cache_lengths": [96], **settings})
        try:
            assert backend.warm_up is not None and backend.warm_up.shapes == 2, backend.compiled_decoding
            with no_recompiles():
                results = together(backend, requests) + [backend.stream(requests[1]).collect()]
            assert not [result for result in results if isinstance(result, BaseException)], results
            assert backend.decoding_shapes == {Shape(2, 96): 1, Shape(1, 96): 1}
        finally:
            backend.close()
        backends.append(backend)
    return backends


def test_a_model_loaded_again_compiles_and_serves_on_the_one_decode_thread(
    tiny_llava_path, png_bytes, generate_threads, compile_on_cpu
):
    """torch.compile's CUDA graphs work only on the thread that set them up (torch 2.11): each model's scheduler
    thread is its own, so every compile and compiled generate() of every model runs on the process's one
    decode thread, which outlives the models."""
    first, second = serve_twice_reloaded(tiny_llava_path, {"device": "cpu", "compile_backend": "eager"}, png_bytes)

    assert first._scheduler._thread is not second._scheduler._thread  # each model had a scheduler thread of its own
    assert len(generate_threads) == 2 * (2 + 2)
    assert {name.split("_")[0] for name in generate_threads} == {THREAD_NAME}  # warm-ups and batches alike
    assert len(set(generate_threads)) == 1


# -- on a GPU -------------------------------------------------------------------------------------------------

cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@cuda_only
def test_inductor_with_cuda_graphs_serves_every_batch_size_without_compiling_again(tiny_llava_path, png_bytes):
    backend = TransformersBackend(
        {"path": tiny_llava_path, "max_batch_size": 4, "batch_wait_ms": 2000, "compile_cache_lengths": [128]}
    )
    try:
        assert backend.warm_up.shapes == 3 and backend.warm_up.gpu_memory_mib > 0
        requests = [ask(f"Question {index}?", *([png_bytes] if index % 2 else [])) for index in range(3)]
        with no_recompiles():
            batched = together(backend, requests)
            alone = [backend.stream(request).collect() for request in requests]
        assert not [result for result in batched if isinstance(result, BaseException)]
        assert all(1 <= result.completion_tokens <= 12 for result in batched)
        # bf16 over a padded batch may round differently from a batch of one: the same start at least
        assert [result.text[:4] for result in batched] == [result.text[:4] for result in alone]
        assert backend.decoding_shapes == {Shape(4, 128): 1, Shape(1, 128): 3}
    finally:
        backend.close()


@cuda_only
def test_a_model_loaded_again_serves_with_cuda_graphs(tiny_llava_path, png_bytes, generate_threads):
    """The failure this thread exists for: inductor's CUDA graphs, a model released and loaded again."""
    serve_twice_reloaded(tiny_llava_path, {}, png_bytes)

    assert len(set(generate_threads)) == 1 and generate_threads[0].startswith(THREAD_NAME)


@cuda_only
def test_auto_serves_without_compiling_when_compiling_fails(tiny_causal_path, monkeypatch):
    def failing_compile(*args, **kwargs):
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(torch, "compile", failing_compile)
    backend = TransformersBackend({"path": tiny_causal_path, "compile_cache_lengths": [64]})
    try:
        assert backend.compiled_decoding == "off: compiling failed (RuntimeError: no compiler here)"
        assert 1 <= backend.stream(ask("Hello?")).collect().completion_tokens <= 12
        assert backend.decoding_shapes == {}
    finally:
        backend.close()
