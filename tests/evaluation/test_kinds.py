"""The registry of batch kinds: every kind of batch has its package's registration, every download it offers is a
registered export, and a package that brings a `registration` module is picked up with no change elsewhere."""

from __future__ import annotations

import sys

import pytest

import evaluation
from annotate.errors import ApplicationError
from annotate.models import Batch
from evaluation import kinds
from evaluation.exports import registry as exports
from tests.factories import BatchFactory


def test_every_batch_kind_is_registered():
    assert set(kinds.KINDS) == set(Batch.Kind.values)


def test_every_download_a_kind_offers_is_a_registered_export():
    for kind in kinds.KINDS.values():
        assert kind.downloads and set(kind.downloads) <= set(exports.EXPORTS), kind.kind


def test_every_kind_declares_report_actions_the_page_knows():
    for kind in kinds.KINDS.values():
        assert set(kind.report_actions) <= set(kinds.REPORT_ACTIONS), kind.kind
    # Session actions belong to the kind that counts sessions
    session_actions = {"recount", "sessions", "sessions-export"}
    for kind in kinds.KINDS.values():
        assert bool(session_actions & set(kind.report_actions)) == kind.counts_sessions, kind.kind
        assert "sessions" not in kind.downloads or kind.counts_sessions, kind.kind


def test_autodiscover_imports_a_new_package_registration(tmp_path, monkeypatch):
    package = tmp_path / "newkind"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "registration.py").write_text("IMPORTED = True\n")
    monkeypatch.setattr(evaluation, "__path__", [*evaluation.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "evaluation.newkind.registration", raising=False)
    kinds.autodiscover()
    assert sys.modules["evaluation.newkind.registration"].IMPORTED
    for name in ("evaluation.newkind.registration", "evaluation.newkind"):
        monkeypatch.delitem(sys.modules, name)


def test_registering_a_kind_or_an_export_twice_is_refused():
    with pytest.raises(ValueError, match="registered twice"):
        kinds.register(kinds.KINDS[Batch.Kind.FIRE])
    with pytest.raises(ValueError, match="registered twice"):
        exports.register_export("costs", exports.TABLE_FORMATS, lambda batch, fmt, filters: b"")


@pytest.mark.django_db
def test_a_batch_of_an_unregistered_kind_says_so(monkeypatch):
    batch = BatchFactory()
    monkeypatch.delitem(kinds.KINDS, batch.kind)
    with pytest.raises(ApplicationError, match="registers batches of kind"):
        kinds.kind_of(batch)
