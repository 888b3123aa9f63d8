"""Table renderers and plots."""

import csv
import io
import json
from decimal import Decimal
from fractions import Fraction

import pytest

from evaluation.exports.renderers import FORMATS, Table, render
from evaluation.exports.renderers.tables import latex_escape, to_latex
from evaluation.interfeedback.metrics import OutcomeCounts
from evaluation.interfeedback.plots import outcome_shares, render_plot
from evaluation.stats import percent

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _table() -> Table:
    return Table(
        title="Accuracy (%) & more",
        columns=["Model", "Visual Logic", "Average"],
        rows=[
            ["gpt-4o", percent(Fraction(17, 80)), Decimal("18.8")],  # 21.3
            ['claude|3.5, "sonnet"', None, 7],
        ],
        notes=["Pooled over sessions."],
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Acc (%)", r"Acc (\%)"),
        ("a & b", r"a \& b"),
        ("$x$", r"\$x\$"),
        ("#Neg", r"\#Neg"),
        ("gpt_4o", r"gpt\_4o"),
        ("{x}", r"\{x\}"),
        ("~", r"\textasciitilde{}"),
        ("^", r"\textasciicircum{}"),
        ("a\\b", r"a\textbackslash{}b"),  # the braces it adds are not escaped again
        ("plain-text 1.5", "plain-text 1.5"),
    ],
)
def test_latex_escape(text, expected):
    assert latex_escape(text) == expected


def test_latex_is_booktabs_with_escaped_cells():
    tex = to_latex(_table())
    lines = tex.splitlines()
    assert lines[0] == r"\begin{table}[t]"
    assert r"\caption{Accuracy (\%) \& more}" in lines
    assert r"\begin{tabular}{lrr}" in lines  # text column left, numeric columns right
    assert lines.index(r"\toprule") < lines.index(r"\midrule") < lines.index(r"\bottomrule")
    assert r"Model & Visual Logic & Average \\" in lines
    assert r"gpt-4o & 21.3 & 18.8 \\" in lines
    assert r'claude|3.5, "sonnet" & - & 7 \\' in lines
    assert lines[-1] == r"\end{table}"


def test_csv_quotes_and_prints_decimals_exactly():
    rows = list(csv.reader(io.StringIO(render(_table(), "csv"))))
    assert rows == [
        ["Model", "Visual Logic", "Average"],
        ["gpt-4o", "21.3", "18.8"],
        ['claude|3.5, "sonnet"', "", "7"],  # undefined: empty, what a spreadsheet or pandas reads as missing
    ]


def test_markdown_escapes_pipes_and_keeps_title_and_notes():
    md = render(_table(), "md")
    assert md.startswith("**Accuracy (%) & more**\n\n")
    assert "| Model | Visual Logic | Average |\n|---|---:|---:|\n" in md
    assert '| claude\\|3.5, "sonnet" | - | 7 |' in md
    assert md.rstrip().endswith("Pooled over sessions.")


def test_json_rows_are_dicts_with_exact_numbers_and_null_for_undefined():
    document = json.loads(render(_table(), "json"))
    assert document["title"] == "Accuracy (%) & more"
    assert document["columns"] == ["Model", "Visual Logic", "Average"]
    assert document["rows"] == [
        {"Model": "gpt-4o", "Visual Logic": 21.3, "Average": 18.8},
        {"Model": 'claude|3.5, "sonnet"', "Visual Logic": None, "Average": 7},
    ]
    assert '"Visual Logic": 21.3,' in render(_table(), "json")  # never 21.299999...


def test_render_every_format_and_reject_unknown():
    assert set(FORMATS) == {"csv", "md", "tex", "json"}
    for fmt in FORMATS:
        assert isinstance(render(_table(), fmt), str)
    with pytest.raises(ValueError, match="unknown table format"):
        render(_table(), "xlsx")


def test_table_rejects_ragged_rows_and_duplicate_columns():
    with pytest.raises(ValueError, match="row 0"):
        Table("t", ["a", "b"], [["only one"]])
    with pytest.raises(ValueError, match="unique"):
        Table("t", ["a", "a"], [])


# --- plots ----------------------------------------------------------------------------------------

COUNTS = {
    ("gpt-4o", "Visual Logic"): OutcomeCounts(10, (3, 2, 1, 1)),
    ("gpt-4o", "MMMU-Pro"): OutcomeCounts(5, (1, 0, 2, 0)),
    ("claude", "Visual Logic"): OutcomeCounts(4, (0, 4, 0, 0)),
}


def test_outcome_shares():
    # 10 sessions: 3, 2, 1, 1 corrected in rounds 0..3 and 3 never -> percent of sessions
    assert outcome_shares(OutcomeCounts(10, (3, 2, 1, 1))) == [30.0, 20.0, 10.0, 10.0, 30.0]
    assert outcome_shares(OutcomeCounts()) == [0.0] * 5


@pytest.mark.parametrize("figure", ["fig4", "fig5"])
def test_render_plot_png_and_svg(figure):
    png = render_plot(figure, COUNTS, "png")
    assert png.startswith(PNG_SIGNATURE)
    svg = render_plot(figure, COUNTS, "svg")
    assert b"<svg" in svg
    assert render_plot(figure, COUNTS, "svg") == svg  # deterministic, so exports can be diffed


def test_render_plot_rejects_unknown_names_and_empty_data():
    with pytest.raises(ValueError, match="unknown figure"):
        render_plot("fig9", COUNTS, "png")
    with pytest.raises(ValueError, match="unknown plot format"):
        render_plot("fig4", COUNTS, "gif")
    with pytest.raises(ValueError, match="no sessions"):
        render_plot("fig4", {}, "png")


def test_column_groups_must_cover_the_columns_and_name_them():
    with pytest.raises(ValueError, match="column groups span 2 columns but the table has 3"):
        Table(title="", columns=["Model", "a: x", "a: y"], rows=[], column_groups=[("", 1), ("a", 1)])
    with pytest.raises(ValueError, match="column 'y' is in group 'a': name it 'a: ...'"):
        Table(title="", columns=["Model", "a: x", "y"], rows=[], column_groups=[("", 1), ("a", 2)])
    table = Table(title="", columns=["Model", "a: x", "a: y"], rows=[["m", 1, 2]], column_groups=[("", 1), ("a", 2)])
    assert table.column_headers() == ["Model", "x", "y"]
    assert render(table, "csv").splitlines()[0] == "Model,a: x,a: y"  # csv keeps the flat, unique names
