"""Fixtures of the model runtime's tests, with no Django: tests/models_runtime runs on its own where the app is
not installed (a GPU box: see benchmarks/gpu_check.sh)."""

from __future__ import annotations

import contextlib

import pytest


@pytest.fixture(scope="session")
def tiny_llava_path(tmp_path_factory) -> str:
    """A tiny LLaVA-style checkpoint built once per test run (random weights, no network)."""
    from models_runtime.tiny import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("models") / "tiny-llava")


@pytest.fixture(scope="session")
def tiny_causal_path(tmp_path_factory) -> str:
    from models_runtime.tiny import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("models") / "tiny-causal")


@pytest.fixture
def release_backends():
    """The test starts and ends with an empty backend registry (closed backends free their memory)."""
    from models_runtime import registry

    registry.release_all()
    yield
    registry.release_all()


@contextlib.contextmanager
def compiling_on_cpu():
    """Compiled decoding on the CPU, for tests: transformers compiles the decode step on GPUs only, except with
    the flag it keeps for its own tests (models_runtime.compiled_decoding.TESTS_COMPILE_ON_CPU). It is read when
    a backend loads: backends loaded inside compile on the CPU for as long as they live."""
    from models_runtime import compiled_decoding

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiled_decoding, "TESTS_COMPILE_ON_CPU", True)
        yield


@pytest.fixture
def compile_on_cpu():
    with compiling_on_cpu():
        yield
