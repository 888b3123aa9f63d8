"""Batch importers, one module per input format. Each validates everything first (``line N, field F: ...``),
then writes in one transaction. ``IMPORTERS`` maps the ``--kind`` name to the importer."""

from __future__ import annotations

from annotate.importers.common import ImportContext, Importer, ImportReport, Problem
from annotate.importers.fire import FireImporter
from annotate.importers.interfeedback import InterFeedbackImporter
from annotate.importers.preference import PreferenceImporter
from annotate.importers.rows import RowsImporter

IMPORTERS: dict[str, Importer] = {
    "interfeedback": InterFeedbackImporter(),
    "fire": FireImporter(),
    "preference": PreferenceImporter(),
    "rows": RowsImporter(),
}

__all__ = ["IMPORTERS", "ImportContext", "ImportReport", "Importer", "Problem"]
