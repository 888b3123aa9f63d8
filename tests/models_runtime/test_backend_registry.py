"""One warm backend per (kind, settings) per process; lazy imports; clear errors for unknown kinds."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from models_runtime import PermanentModelError, registry
from models_runtime.backends.simulated import SimulatedBackend


def test_importing_the_registry_does_not_import_torch_or_transformers():
    code = (
        "import sys, models_runtime.registry\n"
        "heavy = [name for name in ('torch', 'transformers', 'httpx') if name in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_same_settings_share_one_instance_whatever_the_key_order():
    first = registry.get_backend("simulated", {"chunk_delay": 0, "correct_from_round": 2})
    second = registry.get_backend("simulated", {"correct_from_round": 2, "chunk_delay": 0})
    other = registry.get_backend("simulated", {"chunk_delay": 0})

    assert isinstance(first, SimulatedBackend)
    assert first is second and first is not other
    assert len(registry.loaded_backends()) == 2


def test_unknown_kind_lists_the_known_ones():
    with pytest.raises(
        PermanentModelError, match="unknown model backend 'gguf'.*openai, replay, simulated, transformers"
    ):
        registry.get_backend("gguf", {})


def test_a_failed_load_is_not_cached(tmp_path):
    settings = {"path": str(tmp_path / "missing")}

    for _ in range(2):
        with pytest.raises(PermanentModelError, match="not found"):
            registry.get_backend("transformers", settings)
    assert registry.loaded_backends() == []


def test_release_closes_and_forgets(tiny_causal_path):
    settings = {"path": tiny_causal_path}
    backend = registry.get_backend("transformers", settings)

    assert registry.release_backend("transformers", dict(settings)) is True

    assert backend.model is None
    assert registry.release_backend("transformers", settings) is False
    assert registry.get_backend("transformers", settings) is not backend


def test_release_all_closes_everything(tiny_causal_path, fake_openai):
    model = registry.get_backend("transformers", {"path": tiny_causal_path})
    server = registry.get_backend("openai", {"base_url": fake_openai.base_url, "model": "tiny-model"})

    registry.release_all()

    assert model.model is None and server._client.is_closed
    assert registry.loaded_backends() == []


def test_concurrent_first_use_loads_once(tiny_causal_path, monkeypatch):
    cls = registry.backend_class("transformers")
    original_init = cls.__init__
    created = []

    def counting_init(self, settings=None):
        created.append(self)
        original_init(self, settings)

    monkeypatch.setattr(cls, "__init__", counting_init)
    backends = []

    def use() -> None:
        backends.append(registry.get_backend("transformers", {"path": tiny_causal_path}))

    threads = [threading.Thread(target=use) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert len(created) == 1
    assert len(backends) == 6 and all(backend is backends[0] for backend in backends)


def test_settings_must_be_json():
    with pytest.raises(PermanentModelError, match="JSON"):
        registry.get_backend("simulated", {"chunk_delay": object()})
