"""Fixtures for the model runtime: tiny local checkpoints and a small OpenAI-compatible SSE server
(tests/fake_openai_server.py). Nothing here needs Django: with ``--confcutdir tests/models_runtime`` these tests
run without the app (tests/runtime_fixtures.py)."""

from __future__ import annotations

import io

import pytest

from tests.fake_openai_server import serving
from tests.runtime_fixtures import compile_on_cpu, release_backends, tiny_causal_path, tiny_llava_path  # noqa: F401


@pytest.fixture(autouse=True)
def _empty_registry(release_backends):  # noqa: F811 - the fixture imported above
    """Every runtime test starts and ends with an empty registry."""
    yield


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
