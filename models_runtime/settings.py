"""Strict readers for a backend's settings: a bad value is a PermanentModelError that names the setting."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from models_runtime.base import PermanentModelError


class SettingsReader:
    """Reads one backend's settings; ``backend`` names it in the errors ("transformers setting ...")."""

    def __init__(self, backend: str, settings: Mapping[str, Any]):
        self.backend = backend
        self.settings = settings

    def integer(self, key: str, default: int, *, minimum: int) -> int:
        value = self.settings.get(key, default)
        if not _is_int(value) or value < minimum:
            raise self._bad(key, f"an integer >= {minimum}", value)
        return int(value)

    def number(self, key: str, default: float, *, minimum: int) -> float:
        value = self.settings.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < minimum:
            raise self._bad(key, f"a number >= {minimum}", value)
        return value

    def switch(self, key: str) -> bool | Literal["auto"]:
        """true, false or "auto" (the default): auto lets the backend decide, e.g. by device."""
        value = self.settings.get(key, "auto")
        if value == "auto":
            return "auto"
        if isinstance(value, bool):
            return bool(value)
        raise self._bad(key, 'true, false or "auto"', value)

    def sizes(self, key: str, default: tuple[int, ...], *, minimum: int) -> tuple[int, ...]:
        """A non-empty list of distinct integers >= minimum, returned sorted."""
        value = self.settings.get(key)
        if value is None:
            return default
        if not isinstance(value, list | tuple) or not value or not all(_is_int(v) and v >= minimum for v in value):
            raise self._bad(key, f"a non-empty list of integers >= {minimum}", value)
        return tuple(sorted(set(value)))

    def _bad(self, key: str, kind: str, value: object) -> PermanentModelError:
        return PermanentModelError(f'{self.backend} setting "{key}" must be {kind}, got {value!r}')


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
