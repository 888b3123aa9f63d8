"""Fixtures for the model runtime: tiny local checkpoints and a small OpenAI-compatible SSE server
(tests/fake_openai_server.py)."""

from __future__ import annotations

import io

import pytest

from models_runtime import registry
from models_runtime.tiny import build_tiny_causal_lm, build_tiny_llava
from tests.fake_openai_server import serving


@pytest.fixture(scope="session")
def tiny_llava_path(tmp_path_factory) -> str:
    return build_tiny_llava(tmp_path_factory.mktemp("models") / "tiny-llava")


@pytest.fixture(scope="session")
def tiny_causal_path(tmp_path_factory) -> str:
    return build_tiny_causal_lm(tmp_path_factory.mktemp("models") / "tiny-causal")


@pytest.fixture(autouse=True)
def _release_backends():
    """Each test starts and ends with an empty registry (closed backends free their memory)."""
    registry.release_all()
    yield
    registry.release_all()


@pytest.fixture
def png_bytes() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def fake_openai():
    with serving() as fake:
        yield fake
