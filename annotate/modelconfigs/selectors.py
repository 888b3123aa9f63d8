"""Reads of model configs, for the API and the admin's model check."""

from __future__ import annotations

from django.db.models import QuerySet

from annotate.errors import NotFound
from annotate.models import ModelConfig


def model_configs_list(*, active_only: bool = False) -> QuerySet[ModelConfig]:
    configs = ModelConfig.objects.order_by("name")
    return configs.filter(is_active=True) if active_only else configs


def model_config_get(name: str) -> ModelConfig:
    config = ModelConfig.objects.filter(name=name).first()
    if config is None:
        raise NotFound(f"No model config named {name!r}.")
    return config
