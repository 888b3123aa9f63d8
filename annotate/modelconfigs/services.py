"""Writes of model configs: create, edit, retire. The page, the API and ``manage.py model`` all call these.

Every field is checked first (annotate.modelconfigs.validation) and every problem is reported at once; nothing is
saved unless all of them are fine. A config is never deleted: sessions and exports keep pointing at it, so
retiring it (``is_active`` off) only takes it out of lists and imports.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction

from annotate.errors import InvalidFields
from annotate.modelconfigs.validation import model_config_problems
from annotate.models import ModelConfig

EDITABLE = ("display_name", "backend", "backend_settings", "generation", "queue", "soft_time_limit", "time_limit",
            "input_price_per_million", "output_price_per_million", "max_concurrent_requests", "requests_per_minute",
            "tokens_per_minute", "is_active")
QUOTAS = ("max_concurrent_requests", "requests_per_minute", "tokens_per_minute")
DEFAULTS: dict[str, Any] = {"display_name": "", "backend_settings": {}, "generation": {}, "queue": "",
                            "soft_time_limit": 300, "time_limit": 360}


def model_create(
    *, name: str, backend: str, display_name: str = "", backend_settings: dict[str, object] | None = None,
    generation: dict[str, object] | None = None, queue: str = "", soft_time_limit: int = 300,
    time_limit: int = 360,
    input_price_per_million: Decimal | None = None, output_price_per_million: Decimal | None = None,
    max_concurrent_requests: int | None = None, requests_per_minute: int | None = None,
    tokens_per_minute: int | None = None,
) -> ModelConfig:
    values = {"name": name, "display_name": display_name, "backend": backend,
              "backend_settings": {} if backend_settings is None else backend_settings,
              "generation": {} if generation is None else generation, "queue": queue,
              "soft_time_limit": soft_time_limit, "time_limit": time_limit,
              "input_price_per_million": input_price_per_million,
              "output_price_per_million": output_price_per_million,
              "max_concurrent_requests": max_concurrent_requests, "requests_per_minute": requests_per_minute,
              "tokens_per_minute": tokens_per_minute}
    problems = model_config_problems(values=values, creating=True)
    if problems:
        raise InvalidFields(problems)
    try:
        with transaction.atomic():
            return ModelConfig.objects.create(**values)
    except IntegrityError:  # created meanwhile by someone else
        raise InvalidFields([("name", f"a model named {name!r} already exists")]) from None


def model_update(*, config: ModelConfig, **changes: object) -> ModelConfig:
    """Change some fields of ``config``; the result is checked whole (new settings against the new backend)."""
    if "name" in changes and changes["name"] != config.name:
        raise InvalidFields([("name", f"cannot change (it names queues, sessions and exports); create a new model "
                                      f"instead of renaming {config.name!r}")])
    unknown = sorted(set(changes) - set(EDITABLE) - {"name"})
    if unknown:
        raise InvalidFields([(key, f"not a model setting; editable: {', '.join(EDITABLE)}") for key in unknown])
    values = {key: getattr(config, key) for key in EDITABLE} | {k: v for k, v in changes.items() if k != "name"}
    problems = model_config_problems(values=values, creating=False)
    if problems:
        raise InvalidFields(problems)
    fields = [key for key in EDITABLE if key in changes]
    for key in fields:
        setattr(config, key, values[key])
    if fields:
        config.save(update_fields=fields)
    return config


def model_retire(*, config: ModelConfig) -> ModelConfig:
    """Take a model out of use, keeping every session and export that names it. Retiring twice is a no-op."""
    if config.is_active:
        ModelConfig.objects.filter(pk=config.pk).update(is_active=False)
        config.is_active = False
    return config
