"""What the tests of the compiled reads (annotate.server.compiled_reads) share: the PostgreSQL-only mark, a read taken
both ways, and an instance's columns to compare."""

import pytest
from django.db import connection
from django.db.models import Model
from django.test import override_settings

postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql",
                                     reason="the compiled reads are PostgreSQL's (SQLite: the ORM)")


def columns_of(instance: Model) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}


def both_ways(read):
    """``read()`` with the compiled reads, then through the ORM."""
    with override_settings(COMPILED_READS=True):
        kept = read()
    with override_settings(COMPILED_READS=False):
        return kept, read()
