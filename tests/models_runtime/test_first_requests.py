"""The first requests a GPU model serves at load (models_runtime/first_requests.py), run here on the CPU."""

from __future__ import annotations

import logging

import pytest

from models_runtime.backends.transformers import TransformersBackend
from models_runtime.first_requests import serve_first_requests


@pytest.fixture
def backend(tiny_llava_path, tiny_causal_path, request):
    path = tiny_llava_path if request.param == "llava" else tiny_causal_path
    backend = TransformersBackend({"path": path, "device": "cpu"})
    yield backend
    backend.close()


@pytest.mark.parametrize("backend", ["llava", "causal"], indirect=True)
def test_one_request_of_each_kind_the_model_takes(backend):
    assert sum(backend.batch_sizes.values()) == 0  # on the CPU nothing is served at load
    serve_first_requests(backend)
    # text, and an image where the model takes images: each its own batch of one
    assert backend.batch_sizes == {1: 2 if backend.multimodal else 1}


def test_a_failing_model_is_logged_not_raised(tiny_llava_path, caplog):
    backend = TransformersBackend({"path": tiny_llava_path, "device": "cpu"})
    backend.close()  # every request now fails with a model error
    with caplog.at_level(logging.DEBUG, logger="models_runtime.first_requests"):
        assert serve_first_requests(backend) >= 0
    assert "first request at load" in caplog.text
