"""Backend kinds by name, and one warm instance per (kind, settings) per process.

Backends are imported on first use, so importing this module does not import torch or httpx.
"""

from __future__ import annotations

import importlib
import json
import threading

from models_runtime.base import Backend, BackendSettings, PermanentModelError

BACKENDS: dict[str, str] = {
    "simulated": "models_runtime.backends.simulated:SimulatedBackend",
    "replay": "models_runtime.backends.replay:ReplayBackend",
    "transformers": "models_runtime.backends.transformers:TransformersBackend",
    "openai": "models_runtime.backends.openai:OpenAIBackend",
}

_instances: dict[tuple[str, str], Backend] = {}
_creation_locks: dict[tuple[str, str], threading.Lock] = {}
_lock = threading.Lock()  # guards the two dicts above; never held while a model loads


def backend_class(kind: str) -> type[Backend]:
    try:
        target = BACKENDS[kind]
    except KeyError:
        raise PermanentModelError(
            f"unknown model backend {kind!r}; known backends: {', '.join(sorted(BACKENDS))}"
        ) from None
    module_name, class_name = target.split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise PermanentModelError(f"{target} is not a model backend class")
    return cls


def _key(kind: str, settings: BackendSettings | None) -> tuple[str, str]:
    try:
        canonical = json.dumps(settings or {}, sort_keys=True, separators=(",", ":"))
    except TypeError as exc:
        raise PermanentModelError(f"settings for backend {kind!r} must be JSON-serialisable: {exc}") from exc
    return kind, canonical


def get_backend(kind: str, settings: BackendSettings | None = None) -> Backend:
    """The shared instance for (kind, settings), created on first use. Thread-safe; loads happen once."""
    cls = backend_class(kind)
    key = _key(kind, settings)
    with _lock:
        backend = _instances.get(key)
        if backend is not None:
            return backend
        creation_lock = _creation_locks.setdefault(key, threading.Lock())
    # Loading a model can take minutes: hold only this key's lock, so other backends stay usable meanwhile.
    with creation_lock:
        with _lock:
            backend = _instances.get(key)
        if backend is None:
            backend = cls(dict(settings or {}))  # a failed load raises and caches nothing
            with _lock:
                _instances[key] = backend
        return backend


def release_backend(kind: str, settings: BackendSettings | None = None) -> bool:
    """Close and forget the instance for (kind, settings). Returns whether there was one."""
    key = _key(kind, settings)
    with _lock:
        backend = _instances.pop(key, None)
        _creation_locks.pop(key, None)
    if backend is None:
        return False
    backend.close()
    return True


def release_all() -> None:
    """Close every cached backend (worker shutdown, tests)."""
    with _lock:
        backends = list(_instances.values())
        _instances.clear()
        _creation_locks.clear()
    for backend in backends:
        backend.close()


def loaded_backends() -> list[tuple[str, str]]:
    """(kind, canonical settings) of the warm instances, for status pages and tests."""
    with _lock:
        return list(_instances)
