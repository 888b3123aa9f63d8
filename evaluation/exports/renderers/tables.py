"""Renderers of a table (evaluation.table): CSV, Markdown, LaTeX (booktabs) and JSON."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from typing import Literal

from evaluation.table import UNDEFINED, Cell, Table, cell_text

Format = Literal["csv", "md", "tex", "json"]
FORMATS: tuple[str, ...] = ("csv", "md", "tex", "json")


def _is_number(cell: Cell) -> bool:
    return isinstance(cell, int | float | Decimal) and not isinstance(cell, bool)


def _numeric_columns(table: Table) -> list[bool]:
    """A column is numeric when every defined cell in it is a number (used for right alignment)."""
    flags = []
    for index in range(len(table.columns)):
        defined = [row[index] for row in table.rows if row[index] is not None]
        flags.append(bool(defined) and all(_is_number(cell) for cell in defined))
    return flags


# What makes a spreadsheet (Excel, LibreOffice, Google Sheets) read a cell as a formula (OWASP "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(cell: Cell) -> str:
    """A cell as CSV text that no spreadsheet runs: text starting like a formula gets a leading apostrophe, which
    spreadsheets show as text; numbers (-0.5 is one) stay numbers. An undefined cell is empty (what pandas, R and
    spreadsheets read as missing), not the "-" the text formats print, which makes a column of numbers text."""
    if cell is None:
        return ""
    text = cell_text(cell)
    if isinstance(cell, str) and text.startswith(FORMULA_STARTS) and text != UNDEFINED:
        return "'" + text
    return text


def to_csv(table: Table) -> str:
    """Every CSV the app writes goes through here (tables, ratings, the bundle's files): cells are escaped by
    ``csv_cell``, since annotators' comments and imported names reach researchers' spreadsheets."""
    # Data only: a CSV consumer expects a header line, not a title or footnotes. Lines end in CRLF (RFC 4180), so
    # a carriage return inside a cell is quoted too: with "\n" alone it went out bare and split the row in two.
    table = table.with_counts()  # the sessions behind each percentage, beside it (Tables 3 and 4)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([csv_cell(column) for column in table.columns])
    for row in table.rows:
        writer.writerow([csv_cell(cell) for cell in row])
    return buffer.getvalue()


def _markdown_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _group_starts(table: Table) -> list[tuple[str, bool]]:
    """Per column: its group heading ("" for none) and whether it is the group's first column."""
    starts = []
    for heading, span in table.column_groups:
        starts += [(heading, index == 0) for index in range(span)]
    return starts


def to_markdown(table: Table) -> str:
    numeric = _numeric_columns(table)
    lines = [f"**{_markdown_escape(table.title)}**", ""] if table.title else []
    if table.column_groups:
        # Markdown has one header row: it names the ungrouped columns and each group (over its first column); the
        # grouped columns' own names make the first row below.
        headers = [column if not heading else heading if first else "" for (heading, first), column in
                   zip(_group_starts(table), table.columns, strict=True)]
        names = ["" if not heading else name for (heading, _), name in
                 zip(_group_starts(table), table.column_headers(), strict=True)]
        lines.append("| " + " | ".join(_markdown_escape(c) for c in headers) + " |")
        lines.append("|" + "|".join("---:" if is_num else "---" for is_num in numeric) + "|")
        lines.append("| " + " | ".join(_markdown_escape(c) for c in names) + " |")
    else:
        lines.append("| " + " | ".join(_markdown_escape(c) for c in table.columns) + " |")
        lines.append("|" + "|".join("---:" if is_num else "---" for is_num in numeric) + "|")
    for row in table.grouped_rows():
        lines.append("| " + " | ".join(_markdown_escape(cell_text(cell)) for cell in row) + " |")
    if table.notes:
        lines.append("")
        lines.extend(_markdown_escape(note) for note in table.notes)
    return "\n".join(lines) + "\n"


_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    # One pass over characters, so the braces we insert are never escaped again.
    return "".join(_LATEX_ESCAPES.get(char, char) for char in text)


def to_latex(table: Table) -> str:
    numeric = _numeric_columns(table)
    alignment = "".join("r" if is_num else "l" for is_num in numeric)
    lines = [r"\begin{table}[t]", r"\centering"]
    if table.title:
        lines.append(r"\caption{" + latex_escape(table.title) + "}")
    lines.append(r"\begin{tabular}{" + alignment + "}")
    lines.append(r"\toprule")
    if table.column_groups:  # a heading over each group, as the paper's Table 1 (booktabs' \cmidrule under it)
        cells, rules, start = [], [], 1
        for heading, span in table.column_groups:
            if heading:
                cells.append(rf"\multicolumn{{{span}}}{{c}}{{{latex_escape(heading)}}}")
                rules.append(rf"\cmidrule(lr){{{start}-{start + span - 1}}}")
            else:
                cells += [""] * span
            start += span
        lines.append(" & ".join(cells) + r" \\")
        if rules:
            lines.append(" ".join(rules))
    lines.append(" & ".join(latex_escape(c) for c in table.column_headers()) + r" \\")
    lines.append(r"\midrule")
    for index, row in enumerate(table.grouped_rows()):
        if index and table.group_column is not None and row[table.columns.index(table.group_column)] != "":
            lines.append(r"\midrule")  # a rule between groups, as in the paper's Table 4
        lines.append(" & ".join(latex_escape(cell_text(cell)) for cell in row) + r" \\")
    lines.append(r"\bottomrule")
    lines.append(r"\end{tabular}")
    for note in table.notes:
        lines.append(r"\par\smallskip{\footnotesize " + latex_escape(note) + "}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def _json_cell(cell: Cell) -> str | int | float | None:
    # A Decimal rounded to a few digits converts to the float whose repr is the same digits.
    if isinstance(cell, Decimal):
        return int(cell) if cell.as_tuple().exponent >= 0 else float(cell)
    return cell


def to_json(table: Table) -> str:
    table = table.with_counts()
    document = {
        "title": table.title,
        "columns": table.columns,
        "rows": [
            {column: _json_cell(cell) for column, cell in zip(table.columns, row, strict=True)}
            for row in table.rows
        ],
        "notes": table.notes,
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


_RENDERERS = {"csv": to_csv, "md": to_markdown, "tex": to_latex, "json": to_json}


def render(table: Table, fmt: str) -> str:
    try:
        renderer = _RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown table format {fmt!r}; expected one of {', '.join(FORMATS)}") from None
    return renderer(table)
