"""The table type every report builds: plain data, rendered by evaluation.exports.renderers.

Cells are already-rounded values: `Decimal` prints exactly as rounded (21.3, never 21.299999),
`None` marks an undefined cell and prints as "-" in the text formats (null in JSON).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

Cell = str | int | float | Decimal | None
UNDEFINED = "-"


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    notes: list[str] = field(default_factory=list)
    # A column whose value repeats down a group of rows (Table 4's model): md and tex print it once per group, as
    # the paper does; csv and json keep it on every row so each row stands alone.
    group_column: str | None = None

    def __post_init__(self) -> None:
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"column names must be unique (JSON rows are keyed by them): {self.columns}")
        for index, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(
                    f"row {index} has {len(row)} cells but the table has {len(self.columns)} columns"
                )
        if self.group_column is not None and self.group_column not in self.columns:
            raise ValueError(f"group column {self.group_column!r} is not one of {self.columns}")

    def grouped_rows(self) -> list[list[Cell]]:
        """The rows with the group column blank where it repeats the row above (md and tex)."""
        if self.group_column is None:
            return self.rows
        index, previous, rows = self.columns.index(self.group_column), object(), []
        for row in self.rows:
            value = row[index]
            rows.append(row if value != previous else [*row[:index], "", *row[index + 1:]])
            previous = value
        return rows


def cell_text(cell: Cell) -> str:
    if cell is None:
        return UNDEFINED
    if isinstance(cell, bool):
        return "yes" if cell else "no"
    if isinstance(cell, float):
        return repr(cell)
    return str(cell)
