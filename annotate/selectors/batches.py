"""Reads of batches."""

from __future__ import annotations

from annotate.models import Batch
from annotate.prepared import PreparedQuery

_BY_NAME = PreparedQuery(lambda name: Batch.objects.filter(name=name), str)  # on every next-item request


def batch_by_name(name: str) -> Batch | None:
    return _BY_NAME.first(name)
