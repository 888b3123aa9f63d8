"""FIRE reports on hand-computed values: Table A1 means, summaries, agreement (alpha, kappa), disagreements,
long format and the conversations exported back in FIRE JSON with human ratings."""

import csv
import io
import json
import zipfile
from decimal import Decimal

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command

from annotate.errors import ApplicationError
from annotate.models import Conversation, Rating
from annotate.queue.services import assignment_next
from annotate.rating.fire.services import ratings_save
from evaluation.exports.bundle import bundle_write
from evaluation.exports.renderers.tables import render
from evaluation.fire import reports as fire_reports

pytestmark = pytest.mark.django_db

# Scores by rater for the sample: conversation 1 (fire_test, chartqa) turns 1 fb, 2 resp, 3 fb;
# conversation 2 (fire_train, seedbench) turns 1 fb, 2 resp, 3 fb, 4 resp, 5 fb.
SCORES = {
    "rater1": {"fire-000001": {1: 4, 2: 3, 3: 5}, "fire-000002": {1: 5, 2: 4, 3: 4, 4: 5, 5: 5}},
    "rater2": {"fire-000001": {1: 4, 2: 2, 3: 5}, "fire-000002": {1: 4, 2: 4, 3: 3, 4: 5, 5: 4}},
    "rater3": {"fire-000001": {1: 3, 2: 3, 3: 4}, "fire-000002": {1: 5, 2: 3, 3: 4, 4: 4, 5: 5}},
}
# Hand-computed: fire_test feedback (4,5,4,5,3,4) = 25/6 = 4.17, responses (3,2,3) = 8/3 = 2.67;
# fire_train feedback (5,4,5,4,3,4,5,4,5) = 39/9 = 4.33, responses (4,5,4,5,3,4) = 25/6 = 4.17;
# all: feedback 64/15 = 4.27, responses 33/9 = 3.67.
EXPECTED_A1 = {
    "fire_test": (6, Decimal("4.17"), 3, Decimal("2.67")),
    "fire_train": (9, Decimal("4.33"), 6, Decimal("4.17")),
    "All": (15, Decimal("4.27"), 9, Decimal("3.67")),
}


def rate_all(raters, scores=SCORES):
    """Every rater takes conversations from the queue and saves final scores through the service."""
    for rater in raters:
        while (assignment := assignment_next(annotator=rater)) is not None:
            conversation = assignment.work_item.conversation
            given = scores[rater.username][conversation.external_id]
            ratings_save(annotator=rater, conversation_id=conversation.id,
                         scores={turn: (score, "") for turn, score in given.items()},
                         client_request_id=f"{rater.username}-{conversation.id}", final=True)


@pytest.fixture
def rated(fire_batch, raters):
    rate_all(raters)
    return fire_batch


def test_table_a1_means_per_split(rated):
    table = fire_reports.fire_ratings_table(rated)
    assert table.columns == ["Split", "#Feedback", "Feedback", "Feedback 95% CI", "#Response", "Response",
                             "Response 95% CI"]
    got = {row[0]: (row[1], row[2], row[4], row[5]) for row in table.rows}
    assert got == EXPECTED_A1
    assert [row[0] for row in table.rows] == ["fire_test", "fire_train", "All"]
    for row in table.rows:
        low, high = (Decimal(x) for x in row[3].strip("[]").split(", "))
        assert low <= row[2] <= high
    for fmt in ("csv", "md", "tex", "json"):
        assert "4.27" in render(table, fmt)


def test_drafts_never_reach_a_report(rated, fire_batch):
    Rating.objects.filter(annotator__username="rater3").update(is_final=False)
    table = fire_reports.fire_ratings_table(fire_batch)
    assert table.rows[-1][1] == 10  # rater3's 5 feedback ratings left out


def test_no_ratings_is_a_clear_error(fire_batch):
    with pytest.raises(ApplicationError, match="has no final FIRE ratings"):
        fire_reports.fire_ratings_table(fire_batch)


def test_summary_per_source_and_turn(rated):
    by_source = fire_reports.fire_rating_summary(rated, "source")
    assert [(r[0], r[1], r[2], r[3]) for r in by_source.rows] == [
        ("chartqa", "feedback", 6, Decimal("4.17")), ("chartqa", "response", 3, Decimal("2.67")),
        ("seedbench", "feedback", 9, Decimal("4.33")), ("seedbench", "response", 6, Decimal("4.17")),
    ]
    by_turn = fire_reports.fire_rating_summary(rated, "turn")
    # Turns as the rating page numbers them (index + 1): turn 2 (feedback): 4,4,3,5,4,5 = 25/6; turn 3
    # (response): 3,2,3,4,4,3 = 19/6; turn 5: 5,5,4 = 14/3
    assert [(r[0], r[1], r[2], r[3]) for r in by_turn.rows] == [
        (2, "feedback", 6, Decimal("4.17")), (3, "response", 6, Decimal("3.17")), (4, "feedback", 6, Decimal("4.17")),
        (5, "response", 3, Decimal("4.67")), (6, "feedback", 3, Decimal("4.67")),
    ]
    assert all(r[4] <= r[3] <= r[5] for r in by_turn.rows)


def test_agreement_matches_the_package_per_batch_and_source(rated):
    scopes = {s["scope"]: s for s in fire_reports.fire_agreement(rated)}
    assert set(scopes) == {"All", "source: chartqa", "source: seedbench"}
    # Raters x items, items in conversation/turn order.
    matrix = np.array([
        [SCORES[r]["fire-000001"][t] for t in (1, 2, 3)] + [SCORES[r]["fire-000002"][t] for t in (1, 2, 3, 4, 5)]
        for r in ("rater1", "rater2", "rater3")
    ], dtype=float)
    everything = scopes["All"]
    assert (everything["items"], everything["raters"], everything["ratings"]) == (8, 3, 24)
    assert everything["alpha_ordinal"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]))
    assert everything["alpha_interval"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"))
    assert scopes["source: chartqa"]["alpha_interval"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix[:, :3], level_of_measurement="interval"))
    assert len(everything["kappa_pairs"]) == 3
    table = fire_reports.fire_agreement_table(rated)
    assert table.rows[0][:4] == ["All", 8, 3, 24]


def test_agreement_worked_example(fire_batch, raters):
    """Two raters on the first conversation: A = 1,2,3 and B = 1,2,4.

    Interval alpha by hand: pairable values 1,1,2,2,3,4 (n = 6). D_o = (2 * 1^2) / 6 = 1/3.
    D_e = sum over ordered pairs of (x_i - x_j)^2 / (n(n-1)) = 2 * (6*35 - 13^2) / 30 = 82/30.
    alpha = 1 - (1/3) / (82/30) = 36/41 = 0.878.
    Quadratic kappa: observed weighted disagreement 1/3 * (3-4)^2 = 1/3; expected (1/9) * 21 = 7/3;
    kappa = 1 - (1/3)/(7/3) = 6/7 = 0.857.
    """
    fire_batch.overlap = 2
    fire_batch.save()
    a, b, _ = raters
    first = Conversation.objects.get(external_id="fire-000001")
    for rater, scores in ((a, {1: 1, 2: 2, 3: 3}), (b, {1: 1, 2: 2, 3: 4})):
        assert assignment_next(annotator=rater, batch=fire_batch).work_item.conversation_id == first.id
        ratings_save(annotator=rater, conversation_id=first.id, scores={t: (s, "") for t, s in scores.items()},
                     client_request_id="x", final=True)
    (scope,) = fire_reports.fire_agreement(fire_batch)
    assert scope["alpha_interval"] == pytest.approx(36 / 41)
    assert scope["kappa_pairs"][0]["kappa"] == pytest.approx(6 / 7)
    row = fire_reports.fire_agreement_table(fire_batch).rows[0]
    assert (row[5], row[6]) == (Decimal("0.878"), Decimal("0.857"))
    disputed = fire_reports.fire_disagreements_table(fire_batch).rows
    assert disputed[0][:3] == ["fire-000001", 4, "feedback"] and disputed[0][4] == 1  # index 3: turn 4


def test_disagreements_are_listed_most_disputed_first(rated):
    Rating.objects.filter(annotator__username="rater2", turn__conversation__external_id="fire-000002",
                          turn__index=4).update(score=1)  # 5, 1, 4: the most disputed turn
    rows = fire_reports.fire_disagreements_table(rated, top=3).rows
    assert rows[0][:5] == ["fire-000002", 5, "response", rows[0][3], 4]  # index 4: turn 5 on the page
    assert len(rows) == 3
    assert all(row[4] == 1 for row in rows[1:])  # every other turn has a spread of 1
    assert sorted(rows[0][3].split()) == sorted(f"{a}={s}" for a, s in zip(
        Rating.objects.filter(turn__index=4).order_by("annotator__pseudonym").values_list("annotator__pseudonym",
                                                                                         flat=True),
        Rating.objects.filter(turn__index=4).order_by("annotator__pseudonym").values_list("score", flat=True),
        strict=True))


def test_long_format_and_fire_json_round_trip(rated):
    long = fire_reports.fire_ratings_long(rated)
    assert len(long.rows) == 24
    assert long.columns[:8] == ["conversation", "split", "source", "turn", "role", "kind", "annotator", "score"]
    annotators = {row[6] for row in long.rows}
    assert len(annotators) == 3 and all(a.startswith("ann-") for a in annotators)  # pseudonyms, not usernames

    records = fire_reports.fire_conversations_export(rated)
    assert [r["id"] for r in records] == ["fire-000001", "fire-000002"]
    first = records[0]
    assert first["question"] == {"role": "user", "value": "Which bar is the tallest?"}
    assert first["groundtruth"]["value"] == "green" and first["score"] == [3, 10] and first["round"] == 2
    turns = first["conversations"]
    assert "human_rating" not in turns[0]  # the first student response is not rated
    assert turns[1]["human_rating"] == pytest.approx(11 / 3, abs=1e-4)  # 4, 4, 3
    assert sorted(r["score"] for r in turns[2]["human_ratings"]) == [2, 3, 3]
    assert json.loads(json.dumps(records)) == records


def test_export_command_writes_every_export(rated, tmp_path, capsys):
    call_command("export_fire", batch=rated.name, what="table-a1", format="json")
    table = json.loads(capsys.readouterr().out)
    assert {row["Split"]: row["Feedback"] for row in table["rows"]} == {"fire_test": 4.17, "fire_train": 4.33,
                                                                       "All": 4.27}
    out = tmp_path / "ratings.csv"
    call_command("export_fire", batch=rated.name, what="ratings", format="csv", out=str(out))
    assert len(out.read_text().splitlines()) == 25
    call_command("export_fire", batch=rated.name, what="conversations", format="jsonl", out=str(out))
    assert len(out.read_text().splitlines()) == 2
    for what in ("agreement", "kappa", "disagreements", "summary"):
        call_command("export_fire", batch=rated.name, what=what, format="md")
        assert "|" in capsys.readouterr().out


def test_study_bundle_of_a_fire_batch_holds_its_tables_and_the_ratings(rated):
    buffer = io.BytesIO()
    summary = bundle_write(rated, buffer)
    archive = zipfile.ZipFile(buffer)
    assert {f"tables/{stem}.{fmt}" for stem in ("fire_table_a1_ratings", "fire_ratings_by_source", "fire_agreement",
                                                "fire_kappa", "fire_disagreements")
            for fmt in ("csv", "md", "tex", "json")} <= set(archive.namelist())
    assert not any(name.startswith(("figures/", "data/sessions")) for name in archive.namelist())
    assert "4.27" in archive.read("tables/fire_table_a1_ratings.md").decode()
    ratings = list(csv.DictReader(io.StringIO(archive.read("data/ratings.csv").decode())))
    assert len(ratings) == sum(len(turns) for rater in SCORES.values() for turns in rater.values())
    readme = archive.read("README.md").decode()
    assert "| data/ratings.csv |" in readme and "tables/fire_tables_4_5.*" in summary.skipped
