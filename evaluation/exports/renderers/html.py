"""Tables for the server-rendered pages: text cells for the templates' _table.html."""

from __future__ import annotations

from evaluation.table import Table, cell_text


def html_table(table: Table) -> dict:
    """A Table as text cells, each flagged for right alignment (numbers, and "-" for undefined ones)."""
    return {
        "title": table.title,
        "columns": table.column_headers(),
        "column_groups": table.column_groups,  # a heading row over them (Table 1's providers)
        "rows": [[(cell_text(cell), not isinstance(cell, str)) for cell in row] for row in table.rows],
        "notes": table.notes,
    }


