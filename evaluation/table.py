"""The table type every report builds: plain data, rendered by evaluation.exports.renderers.

Cells are already-rounded values: `Decimal` prints exactly as rounded (21.3, never 21.299999),
`None` marks an undefined cell and prints as "-" in the text formats (null in JSON).

Titles, columns, notes and label cells are English; those made with `annotate.wording.phrase` also know their
translation, which only a page uses (evaluation.exports.renderers.html): every file a table is written to keeps the
English text, whatever the language of the request that built it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from annotate.wording import Phrase, phrase

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
    # Column groups under a shared heading (Table 1's providers): (heading, span) over all columns in order, "" for
    # no heading. A grouped column is named "<heading>: <name>" (csv and json keep that flat, unique name); md and
    # tex print the headings on a row of their own and "<name>" below, as the paper does.
    column_groups: list[tuple[str, int]] = field(default_factory=list)
    # The sessions behind each percentage (Tables 3 and 4): per row, per column, (k, n) where the cell is k / n as a
    # percentage, or None (a label cell). csv and json add them beside their column (`with_counts`); md and tex
    # keep the paper's layout; the report page shows them on request. Never changes a cell's value.
    counts: list[list[tuple[int, int] | None]] = field(default_factory=list)
    counts_note: str = ""  # what k and n count, added to the notes where the counts are shown

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
        if self.column_groups:
            if sum(span for _, span in self.column_groups) != len(self.columns):
                raise ValueError(f"column groups span {sum(span for _, span in self.column_groups)} columns but "
                                 f"the table has {len(self.columns)}")
            for (heading, _), column in zip(self._group_of_each_column(), self.columns, strict=True):
                if heading and not column.startswith(f"{heading}: "):
                    raise ValueError(f"column {column!r} is in group {heading!r}: name it '{heading}: ...'")

        if self.counts and [len(row) for row in self.counts] != [len(self.columns)] * len(self.rows):
            raise ValueError("counts need one entry per cell of every row")

    def counted_columns(self) -> list[bool]:
        return [any(row[index] is not None for row in self.counts) for index in range(len(self.columns))]

    def with_counts(self) -> Table:
        """The same table with, beside each counted column, "<column> (k)" and "<column> (n)": the sessions behind
        each percentage (csv and json). The table itself when it has no counts."""
        if not self.counts:
            return self
        counted = self.counted_columns()
        columns: list[str] = []
        for column, has_counts in zip(self.columns, counted, strict=True):
            columns += [column, f"{column} (k)", f"{column} (n)"] if has_counts else [column]
        rows: list[list[Cell]] = []
        for row, row_counts in zip(self.rows, self.counts, strict=True):
            cells: list[Cell] = []
            for cell, count, has_counts in zip(row, row_counts, counted, strict=True):
                cells.append(cell)
                if has_counts:
                    cells += [count[0], count[1]] if count is not None else [None, None]
            rows.append(cells)
        return Table(title=self.title, columns=columns, rows=rows,
                     notes=[*self.notes, self.counts_note] if self.counts_note else list(self.notes),
                     group_column=self.group_column)

    def _group_of_each_column(self) -> list[tuple[str, int]]:
        return [group for group in self.column_groups for _ in range(group[1])]

    def column_headers(self) -> list[str]:
        """The names md and tex print under the group headings (without the "<heading>: " prefix)."""
        if not self.column_groups:
            return self.columns
        return [_grouped_name(column, heading) if heading else column
                for (heading, _), column in zip(self._group_of_each_column(), self.columns, strict=True)]

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


def grouped_column(heading: str, name: str) -> str:
    """The name of a column under a group heading, "<heading>: <name>", keeping <name> to print under it (a
    phrase stays one, translated on pages)."""
    return phrase("%(heading)s: %(column)s", heading=heading, column=name)


def _grouped_name(column: str, heading: str) -> str:
    name = column.params.get("column") if isinstance(column, Phrase) else None
    return name if isinstance(name, str) else column[len(heading) + 2:]


def cell_text(cell: Cell) -> str:
    if cell is None:
        return UNDEFINED
    if isinstance(cell, bool):
        return "yes" if cell else "no"
    if isinstance(cell, float):
        return repr(cell)
    return str(cell)
