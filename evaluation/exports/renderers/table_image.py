"""A table (Table 3, Table 4, ...) drawn as a PNG or SVG picture, for slides and reports; any matplotlib figure
as PNG or SVG bytes."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from evaluation.table import Table, cell_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

IMAGE_FORMATS: tuple[str, ...] = ("png", "svg")


def table_figure(table: Table) -> Figure:
    rows = [[cell_text(cell) for cell in row] for row in table.rows] or [["-"] * len(table.columns)]
    width = max(4.0, 1.1 * len(table.columns) + 0.6 * max(len(str(row[0])) for row in rows) / 6)
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, 0.9 + 0.32 * (len(rows) + 1) + 0.22 * len(table.notes)), layout="constrained")
    axes = figure.add_subplot()
    axes.axis("off")
    drawn = axes.table(cellText=rows, colLabels=table.columns, loc="upper center", cellLoc="center")
    drawn.auto_set_font_size(False)
    drawn.set_fontsize(8)
    drawn.auto_set_column_width(list(range(len(table.columns))))
    for (row, column), cell in drawn.get_celld().items():
        if row == 0:
            cell.set_text_props(weight="bold")
        elif table.rows and isinstance(table.rows[row - 1][column], str):  # text left, numbers centred
            cell.set_text_props(ha="left")
    axes.set_title(table.title, fontsize=10)
    if table.notes:
        figure.text(0.01, 0.01, "\n".join(table.notes), fontsize=6, va="bottom", ha="left", color="#444")
    return figure


def render_table_image(table: Table, fmt: str) -> bytes:
    """`fmt` "png" or "svg"."""
    return figure_bytes(table_figure(table), fmt)


def figure_bytes(figure: Figure, fmt: str) -> bytes:
    if fmt not in IMAGE_FORMATS:
        raise ValueError(f"unknown plot format {fmt!r}; expected one of {', '.join(IMAGE_FORMATS)}")
    buffer = io.BytesIO()
    # A fixed hash salt and no date keep SVG output byte-identical across runs (diffable exports).
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "feedback-lab"}):
        metadata = {"Date": None} if fmt == "svg" else {}
        figure.savefig(buffer, format=fmt, dpi=150, metadata=metadata)
    return buffer.getvalue()
