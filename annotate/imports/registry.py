"""The batch importers, one per input format, each living with its kind of work. Each validates everything first
(``line N, field F: ...``), then writes in one transaction. ``IMPORTERS`` maps the ``--kind`` name to the importer."""

from __future__ import annotations

from annotate.importkit.common import ImportContext, Importer, ImportReport, Problem
from annotate.rating.fire.importer import FireImporter
from annotate.rating.preference.importer import PreferenceImporter
from annotate.sessions.importers.interfeedback import InterFeedbackImporter
from annotate.sessions.importers.rows import RowsImporter

IMPORTERS: dict[str, Importer] = {
    "interfeedback": InterFeedbackImporter(),
    "fire": FireImporter(),
    "preference": PreferenceImporter(),
    "rows": RowsImporter(),
}

__all__ = ["IMPORTERS", "ImportContext", "ImportReport", "Importer", "Problem"]
