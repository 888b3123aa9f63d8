"""Tables for the server-rendered pages: text cells for the templates' _table.html."""

from __future__ import annotations

from evaluation.table import Table, cell_text


def html_table(table: Table) -> dict:
    """A Table as text cells, each flagged for right alignment (numbers, and "-" for undefined ones)."""
    return {
        "title": table.title,
        "columns": table.column_headers(),
        "column_groups": table.column_groups,  # a heading row over them (Table 1's providers)
        # (text, numeric, the sessions behind it as "k/n" or "")
        "rows": [[(cell_text(cell), not isinstance(cell, str), f"{count[0]}/{count[1]}" if count else "")
                  for cell, count in zip(row, row_counts, strict=True)]
                 for row, row_counts in zip(table.rows, table.counts or [[None] * len(table.columns)] * len(table.rows),
                                            strict=True)],
        "has_counts": bool(table.counts),
        "counts_note": table.counts_note,
        "notes": table.notes,
    }


