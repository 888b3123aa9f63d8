"""Strict readers for settings taken from the environment: a bad value stops start-up with its name."""

from __future__ import annotations

import math
import os
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}

# Every variable the app reads as a setting (filled as settings.py reads them): none of them may be named as a
# model's api_key_env, whose value is sent to the model's server (annotate.modelconfigs.validation).
SETTINGS_NAMES: set[str] = set()


def _read(name: str) -> str | None:
    SETTINGS_NAMES.add(name)
    return os.environ.get(name)


def env_str(name: str, default: str | None = None) -> str | None:
    value = _read(name)
    return default if value is None else value


def env_bool(name: str, default: bool = False) -> bool:
    raw = _read(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false, yes/no), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = _read(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None


def env_float(name: str, default: float) -> float:
    """A finite number (seconds, rates); nan and inf are refused like any other non-number."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = _read(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def local_secret_key(folder) -> str:
    """A secret key for one machine (the demo): made once with `secrets` into ``folder``/secret_key, readable by
    its owner only, and read back on every later start (logins survive a restart)."""
    path = Path(folder) / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process of the demo made it meanwhile
            pass
        else:
            with os.fdopen(descriptor, "w") as file:
                file.write(secrets.token_urlsafe(50))
    return path.read_text().strip()
