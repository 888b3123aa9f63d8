"""Sessions built from per-category counts come back as the paper's tables, cell by cell.

Expected values are computed by hand (percent, one decimal, half up; Average pooled over sessions):
gpt-4o Visual Logic 17/80 = 21.25 -> 21.3; Math 1/16 = 6.25 -> 6.3; Coding round 1: 1/16 wrong -> 6.3;
claude Average 15/80 = 18.75 -> 18.8 (the mean of its two category columns would be 18.75 too, but gpt-4o's
pooled 19/113 = 16.8 differs from its column mean 11.2).
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from annotate.models import ModelConfig, User
from evaluation.exports import registry as exports
from evaluation.exports.filters import NO_FILTERS, ReportFilters
from evaluation.interfeedback import selectors, services
from tests.evaluation.builders import sessions_from_counts
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db

# (model, category): (sessions, sessions first corrected in round 0, 1, 2, 3)
COUNTS = {
    ("gpt-4o", "Visual Logic"): (80, (17, 9, 5, 3)),
    ("gpt-4o", "Math (Text)"): (16, (1, 2, 0, 1)),
    ("gpt-4o", "Coding (Text)"): (17, (1, 1, 0, 0)),
    ("claude-3-5-sonnet", "Visual Logic"): (40, (10, 6, 3, 1)),
    ("claude-3-5-sonnet", "Math (Text)"): (40, (5, 5, 2, 2)),
}

TABLE_3 = [
    ["Model", "Coding (Text)", "Math (Text)", "Visual Logic", "Average"],
    ["claude-3-5-sonnet", "-", "12.5", "25.0", "18.8"],
    ["gpt-4o", "5.9", "6.3", "21.3", "16.8"],
]
TABLE_4 = [
    ["Model", "# Round", "Coding (Text)", "Math (Text)", "Visual Logic", "Average"],
    ["claude-3-5-sonnet", "1", "-", "14.3", "20.0", "16.9"],
    ["claude-3-5-sonnet", "2", "-", "5.7", "10.0", "7.7"],
    ["claude-3-5-sonnet", "3", "-", "5.7", "3.3", "4.6"],
    ["gpt-4o", "1", "6.3", "13.3", "14.3", "12.8"],
    ["gpt-4o", "2", "0.0", "0.0", "7.9", "5.3"],
    ["gpt-4o", "3", "0.0", "6.7", "4.8", "4.3"],
]

# The sessions behind each percentage (k of n), by hand from COUNTS, per row of the tables above: Table 3's k is
# right in round 0 of n sessions; Table 4's k first corrected in that round of n wrong in round 0 (claude Math:
# 40 - 5 = 35 wrong, 5 corrected in round 1 -> 14.3). A category without sessions is 0 of 0 ("-").
TABLE_3_COUNTS = [[(0, 0), (5, 40), (10, 40), (15, 80)], [(1, 17), (1, 16), (17, 80), (19, 113)]]
TABLE_4_COUNTS = [
    [(0, 0), (5, 35), (6, 30), (11, 65)], [(0, 0), (2, 35), (3, 30), (5, 65)], [(0, 0), (2, 35), (1, 30), (3, 65)],
    [(1, 16), (2, 15), (9, 63), (12, 94)], [(0, 16), (0, 15), (5, 63), (5, 94)], [(0, 16), (1, 15), (3, 63), (4, 94)],
]


def as_csv(rows: list[list[str]], counts: list[list[tuple[int, int]]]) -> list[list[str]]:
    """The same cells as CSV writes them: an undefined cell ("-" in md and tex) is empty, and each percentage
    column has its k and n beside it (the values themselves unchanged)."""
    header, *body = rows
    labels = len(header) - len(counts[0])
    expected = [[*header[:labels], *(name for column in header[labels:]
                                     for name in (column, f"{column} (k)", f"{column} (n)"))]]
    for row, row_counts in zip(body, counts, strict=True):
        cells = ["" if cell == "-" else cell for cell in row]
        expected.append([*cells[:labels], *(text for cell, (k, n) in zip(cells[labels:], row_counts, strict=True)
                                            for text in (cell, str(k), str(n)))])
    return expected


def _build_batch(mode: str):
    models = {name: ModelConfigFactory(name=name, backend=ModelConfig.Backend.REPLAY) for name in ("gpt-4o", "claude-3-5-sonnet")}
    annotators = [UserFactory(username=f"ann{i}", role=User.Role.ANNOTATOR) for i in range(3)]
    batch = make_batch(models=list(models.values()), tasks=0)
    sessions = []
    for (model, category), (n, corrected) in COUNTS.items():
        sessions += sessions_from_counts(batch, models[model], category, corrected, n, annotators=annotators)
    if mode == "incremental":
        for session in sessions:
            services.outcome_record(session_id=session.id)
    else:
        services.outcome_recompute(batch_id=batch.id)
    return batch


@pytest.fixture(params=["incremental", "recompute"])
def paper_batch(request, db):
    return _build_batch(request.param)


@pytest.fixture
def recomputed_batch(db):
    return _build_batch("recompute")


def _markdown_rows(text: str) -> list[list[str]]:
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for i, row in enumerate(rows) if i != 1]


def _export(batch, name, fmt, filters=NO_FILTERS) -> str:
    return exports.build_export(batch, name, fmt, filters).read().decode()


def test_accuracy_table_markdown_and_csv_cell_by_cell(paper_batch):
    assert _markdown_rows(_export(paper_batch, "accuracy", "md")) == TABLE_3
    assert list(csv.reader(io.StringIO(_export(paper_batch, "accuracy", "csv")))) == as_csv(TABLE_3, TABLE_3_COUNTS)


def test_correction_table_markdown_and_csv_cell_by_cell(paper_batch):
    markdown = _export(paper_batch, "correction", "md")
    # Markdown names the model once per group of rounds, as the paper's Table 4 does; CSV keeps every row whole.
    assert _markdown_rows(markdown) == [TABLE_4[0], *([row[0] if i % 3 == 0 else "", *row[1:]]
                                                      for i, row in enumerate(TABLE_4[1:]))]
    assert "|---|---:|---:|---:|---:|---:|" in markdown  # numbers right-aligned
    assert list(csv.reader(io.StringIO(_export(paper_batch, "correction", "csv")))) == as_csv(TABLE_4, TABLE_4_COUNTS)


def test_json_latex_and_pictures(recomputed_batch):
    paper_batch = recomputed_batch
    document = json.loads(_export(paper_batch, "accuracy", "json"))
    assert document["rows"][1] == {"Model": "gpt-4o", "Coding (Text)": 5.9, "Coding (Text) (k)": 1,
                                   "Coding (Text) (n)": 17, "Math (Text)": 6.3, "Math (Text) (k)": 1,
                                   "Math (Text) (n)": 16, "Visual Logic": 21.3, "Visual Logic (k)": 17,
                                   "Visual Logic (n)": 80, "Average": 16.8, "Average (k)": 19, "Average (n)": 113}
    assert document["rows"][0]["Coding (Text)"] is None and document["rows"][0]["Coding (Text) (n)"] == 0
    assert any("k right in round 0 of n sessions" in note for note in document["notes"])
    correction = json.loads(_export(paper_batch, "correction", "json"))
    assert [(row["Average"], row["Average (k)"], row["Average (n)"]) for row in correction["rows"]] == [
        (16.9, 11, 65), (7.7, 5, 65), (4.6, 3, 65), (12.8, 12, 94), (5.3, 5, 94), (4.3, 4, 94)]
    assert "(k)" not in _export(paper_batch, "accuracy", "md")  # the paper's layout: values only
    assert r"gpt-4o & 1 & 6.3 & 13.3 & 14.3 & 12.8 \\" in _export(paper_batch, "correction", "tex")
    for name in ("accuracy", "correction", "fig4", "fig5"):
        assert exports.build_export(paper_batch, name, "png").read().startswith(b"\x89PNG\r\n\x1a\n")
        assert b"<svg" in exports.build_export(paper_batch, name, "svg").read()


def test_filtered_tables_cover_the_subset_and_say_so(paper_batch):
    filters = ReportFilters(category="Visual Logic", model="gpt-4o")
    rows = list(csv.reader(io.StringIO(_export(paper_batch, "accuracy", "csv", filters))))
    assert rows == [["Model", "Visual Logic", "Visual Logic (k)", "Visual Logic (n)", "Average", "Average (k)",
                     "Average (n)"], ["gpt-4o", "21.3", "17", "80", "21.3", "17", "80"]]
    assert "Filtered: model=gpt-4o, category=Visual Logic" in _export(paper_batch, "accuracy", "md", filters)


def test_per_annotator_breakdown_adds_up(paper_batch):
    breakdown = selectors.annotator_breakdown(paper_batch)
    assert len(breakdown) == 3
    assert sum(row.counts.sessions for row in breakdown) == sum(n for n, _ in COUNTS.values())
    assert all(row.pseudonym.startswith("ann-") for row in breakdown)
