"""Tables for the server-rendered pages: text cells for the templates' _table.html.

The one place a table is translated: its title, column names, group headings, notes and label cells made with
`annotate.wording.phrase` are shown in the request's language; names and numbers from the data as they are. Files
(csv, md, tex, json) never come through here, so they keep the English text.
"""

from __future__ import annotations

from annotate.wording import Phrase, shown
from evaluation.table import Table, cell_text


def html_table(table: Table) -> dict:
    """A Table as text cells, each flagged for right alignment (numbers, and "-" for undefined ones)."""
    return {
        "title": shown(table.title),
        "columns": [shown(column) for column in table.column_headers()],
        "column_groups": [(shown(heading), span) for heading, span in table.column_groups],  # Table 1's providers
        # (text, numeric, the sessions behind it as "k/n" or "")
        "rows": [[(cell.shown() if isinstance(cell, Phrase) else cell_text(cell), not isinstance(cell, str),
                   f"{count[0]}/{count[1]}" if count else "")
                  for cell, count in zip(row, row_counts, strict=True)]
                 for row, row_counts in zip(table.rows, table.counts or [[None] * len(table.columns)] * len(table.rows),
                                            strict=True)],
        "has_counts": bool(table.counts),
        "counts_note": shown(table.counts_note),
        "notes": [shown(note) for note in table.notes],
    }
