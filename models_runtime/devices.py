"""Where a local checkpoint runs and in which precision: the ``device`` and ``dtype`` settings, resolved."""

from __future__ import annotations

import torch

from models_runtime.base import PermanentModelError

DTYPES = ("bfloat16", "float16", "float32")


def resolve_device(value: str) -> str:
    """"auto" is cuda when a GPU is there, else cpu; an explicit cuda without CUDA is refused."""
    value = str(value or "auto").lower()
    if value == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if value == "cpu":
        return value
    if value == "cuda" or value.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise PermanentModelError(
                f'device "{value}" was asked for, but CUDA is not available on this machine'
            )
        return value
    raise PermanentModelError(f'unknown device "{value}": use "auto", "cpu" or "cuda"')


def resolve_dtype(value: str, device: str) -> str:
    """"auto" is bfloat16 on a GPU, float32 on the CPU."""
    value = str(value or "auto").lower()
    if value == "auto":
        return "bfloat16" if device.startswith("cuda") else "float32"
    if value not in DTYPES:
        raise PermanentModelError(f'unknown dtype "{value}": use "auto", {", ".join(DTYPES)}')
    return value
