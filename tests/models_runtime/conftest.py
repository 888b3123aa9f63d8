"""Fixtures for the model runtime: tiny local checkpoints and a small OpenAI-compatible SSE server
(tests/fake_openai_server.py)."""

from __future__ import annotations

import io

import pytest

from tests.fake_openai_server import serving


@pytest.fixture(autouse=True)
def _empty_registry(release_backends):
    """Every runtime test starts and ends with an empty registry (tests/conftest.py)."""
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
