"""Preference reports end to end: import a preference batch, rank and score through the rating service, then the
report's tables (hand-computed), the researcher page (reached from the batch report), downloads and the API.
Every API: happy path, 403, 404, bad input 400 with a clear message."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from rest_framework.authtoken.models import Token

from annotate.errors import ApplicationError
from annotate.imports.batches import batch_import
from annotate.models import Batch, User
from annotate.queue.services import assignment_next
from annotate.rating.preference.services import preference_save
from evaluation.preference import reports as preference_reports
from tests.annotate.rating.fire.fire_data import write_jsonl
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

RECORDS = [
    {"id": "p1", "question": "What does the chart show?", "responses": ["Bars.", "A pie.", "Lines."],
     "models": ["alpha", "beta", "gamma"]},
    {"id": "p2", "question": "Is this safe?", "responses": ["Yes.", "It depends."], "models": ["beta", "alpha"]},
    {"id": "p3", "question": "Count the dots.", "responses": ["3", "4"], "models": ["alpha", "beta"]},
]
# p3's list is cut to one name after the import (the importer refuses such a record now; batches imported before
# it checked the list can still hold one): the report leaves p3 out and says why.
SHORT_MODELS = {"p3": ["alpha"]}
# (ranking, (helpfulness, faithfulness, ethics) per candidate) by conversation and rater.
PLAN = {
    "r1": {"p1": ("1>2>3", [(5, 4, 5), (3, 3, 5), (2, 2, 4)]), "p2": ("1>2", [(4, 5, 5), (2, 3, 5)]),
           "p3": ("1>2", [(3, 3, 3), (3, 3, 3)])},
    "r2": {"p1": ("2>1=3", [(4, 4, 5), (5, 5, 5), (4, 3, 5)]), "p2": ("2>1", [(3, 3, 4), (5, 4, 5)]),
           "p3": ("1=2", [(3, 3, 3), (3, 3, 3)])},
}
# Hand-computed from PLAN (orientation: first-seen order alpha, beta, gamma):
# alpha-beta: p1 r1 alpha>beta (A), p1 r2 beta first (B), p2 r1 beta>alpha (B), p2 r2 alpha>beta (A):
#   2 wins, 0 ties, 2 losses over 2 items, 50.0%; each item scores 1 of 2, so every resample gives 50.0.
# alpha-gamma: p1 r1 A, p1 r2 tie (1=3): 1/1/0, (1 + 1/2) / 2 = 75.0%, one item.
# beta-gamma: p1 r1 A, p1 r2 A: 100.0%.
EXPECTED_PAIRS = [
    ["alpha", "beta", 2, 4, 2, 0, 2, Decimal("50.0"), Decimal("50.0"), Decimal("50.0")],
    ["alpha", "gamma", 1, 2, 1, 1, 0, Decimal("75.0"), Decimal("75.0"), Decimal("75.0")],
    ["beta", "gamma", 1, 2, 2, 0, 0, Decimal("100.0"), Decimal("100.0"), Decimal("100.0")],
]
# Scores: alpha h (5,4,2,5) 4.00 f (4,4,3,4) 3.75 e 5.00; beta h (3,5,4,3) 3.75 f (3,5,5,3) 4.00 e (5,5,5,4) 4.75;
# gamma h (2,4) 3.00 f (2,3) 2.50 e (4,5) 4.50.
EXPECTED_MEANS = {
    "alpha": (4, Decimal("4.00"), Decimal("3.75"), Decimal("5.00")),
    "beta": (4, Decimal("3.75"), Decimal("4.00"), Decimal("4.75")),
    "gamma": (2, Decimal("3.00"), Decimal("2.50"), Decimal("4.50")),
}


def import_preferences(tmp_path, records, name="pref-report", overlap=3) -> Batch:
    report = batch_import(path=write_jsonl(tmp_path / f"{name}.jsonl", records), name=name, kind="preference",
                          settings={"overlap": overlap})
    assert report.status == "imported", report.render()
    batch = Batch.objects.get(name=name)
    for conversation in batch.conversations.filter(external_id__in=SHORT_MODELS):
        conversation.metadata["models"] = SHORT_MODELS[conversation.external_id]
        conversation.save(update_fields=["metadata"])
    return batch


def rank_all(raters: dict[str, User], plan=PLAN) -> None:
    """Each rater takes the conversations from the queue and saves final scores and a ranking."""
    for username, rater in raters.items():
        while (assignment := assignment_next(annotator=rater)) is not None:
            conversation = assignment.work_item.conversation
            ranking, scores = plan[username][conversation.external_id]
            ratings = {i: {"helpfulness": h, "faithfulness": f, "ethics": e, "reason": "ok"}
                       for i, (h, f, e) in enumerate(scores)}
            preference_save(annotator=rater, conversation_id=conversation.id, ratings=ratings, ranking=ranking,
                            client_request_id=f"{username}-{conversation.id}", final=True)


@pytest.fixture
def raters(db):
    return {name: UserFactory(username=name, pseudonym=f"ann-{name}") for name in ("r1", "r2")}


@pytest.fixture
def batch(tmp_path, raters, researcher):
    batch = import_preferences(tmp_path, RECORDS)
    batch.members.add(researcher)
    rank_all(raters)
    # A third rater's draft never reaches the report.
    drafter = UserFactory(username="r3", pseudonym="ann-r3")
    conversation = assignment_next(annotator=drafter).work_item.conversation
    preference_save(annotator=drafter, conversation_id=conversation.id, ranking="2>1",
                    ratings={0: {"helpfulness": 1, "faithfulness": 1, "ethics": 1}}, final=False)
    return batch


def test_pairs_table(batch):
    report = preference_reports.preference_report(batch)
    assert report.pairs.columns == ["Model A", "Model B", "Items", "Judgments", "A wins", "Ties", "B wins",
                                    "A win rate (%)", "95% CI low (%)", "95% CI high (%)"]
    assert report.pairs.rows == EXPECTED_PAIRS
    assert (report.data.labelled_by, report.data.conversations, report.data.rankings, report.data.raters) == (
        "models", 3, 4, 2)
    assert report.data.left_out == [("p3", "'models' has 1 names for 2 responses")]
    assert any("1 rated conversation(s) left out (p3: 'models' has 1 names for 2 responses)" in note
               for note in report.pairs.notes)


def test_agreement_tables(batch):
    report = preference_reports.preference_report(batch)
    # Comparisons judged by both raters: p1 (1,2) +1/-1, (1,3) +1/0, (2,3) +1/+1; p2 (1,2) -1/+1: 1 of 4 agree.
    # Kappa (quadratic over -1, 0, +1), each comparison as coded and mirrored: r1 (+1, +1, +1, -1) and its mirror
    # (-1, -1, -1, +1) against r2 (-1, 0, +1, +1) and (+1, 0, -1, -1): observed weighted disagreement
    # 2 * (1 + 1/4 + 0 + 1) / 8 = 9/16; marginals r1 (1/2, 0, 1/2), r2 (3/8, 1/4, 3/8): expected
    # 2 * 1/2 * (1/4 * 1/4 + 3/8 * 1) = 7/16; kappa = 1 - (9/16) / (7/16) = -2/7.
    rows = {row[0]: row for row in report.agreement.rows}
    assert rows["All raters"][:4] == ["All raters", 2, 4, Decimal("25.0")]
    assert rows["All raters"][5] == Decimal("-0.286")
    assert rows["ann-r1"] == ["ann-r1", 2, 4, Decimal("25.0"), None, Decimal("-0.286")]
    assert rows["ann-r2"] == ["ann-r2", 2, 4, Decimal("25.0"), None, Decimal("-0.286")]
    assert rows["All raters"][4] is not None and rows["All raters"][4] < 0  # alpha: they mostly disagree
    assert report.kappa.rows == [["ann-r1", "ann-r2", 4, Decimal("25.0"), Decimal("-0.286")]]


def test_scores_table(batch):
    table = preference_reports.preference_report(batch).scores
    assert table.columns == ["Model", "Ratings", "Helpfulness", "Helpfulness 95% CI low", "Helpfulness 95% CI high",
                             "Faithfulness", "Faithfulness 95% CI low", "Faithfulness 95% CI high", "Ethics",
                             "Ethics 95% CI low", "Ethics 95% CI high"]
    assert {row[0]: (row[1], row[2], row[5], row[8]) for row in table.rows} == EXPECTED_MEANS
    for row in table.rows:
        for mean, low, high in (row[2:5], row[5:8], row[8:11]):
            assert isinstance(low, Decimal) and low <= mean <= high
    # gamma is in one item (p1): resampling items leaves nothing to vary, the interval is its mean. Resampling
    # its two ratings (the old way) gave helpfulness [2.00, 4.00].
    gamma = next(row for row in table.rows if row[0] == "gamma")
    assert gamma[2:5] == [Decimal("3.00"), Decimal("3.00"), Decimal("3.00")]


def test_records_without_models_are_compared_by_position(tmp_path, raters):
    records = [{"id": "q1", "question": "?", "responses": ["a", "b"]},
               {"id": "q2", "question": "?", "responses": ["c", "d"]}]
    batch = import_preferences(tmp_path, records, name="by-position", overlap=2)
    plan = {"r1": {"q1": ("1>2", [(4, 4, 4)] * 2), "q2": ("1=2", [(4, 4, 4)] * 2)},
            "r2": {"q1": ("1>2", [(4, 4, 4)] * 2), "q2": ("2>1", [(4, 4, 4)] * 2)}}
    rank_all(raters, plan)
    report = preference_reports.preference_report(batch)
    assert report.data.labelled_by == "positions" and report.data.left_out == []
    # Candidate 1 vs 2: q1 A, A; q2 tie, B -> 2/1/1, (2 + 1/2) / 4 = 62.5%.
    assert report.pairs.rows[0][:8] == ["Candidate 1", "Candidate 2", 2, 4, 2, 1, 1, Decimal("62.5")]
    assert any("compared by position" in note for note in report.pairs.notes)
    # q1 agrees, q2 does not.
    assert report.agreement.rows[0][:4] == ["All raters", 2, 2, Decimal("50.0")]


def test_no_rankings_yet(tmp_path, researcher):
    batch = import_preferences(tmp_path, RECORDS[:2], name="empty")
    report = preference_reports.preference_report(batch)
    assert (report.data.rankings, report.pairs.rows, report.scores.rows) == (0, [], [])
    with pytest.raises(ApplicationError, match="has no final rankings to report yet"):
        preference_reports.preference_export(batch, "pairs", "csv")


# --- API --------------------------------------------------------------------------------------------


@pytest.fixture
def token_client(api_client, researcher):
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return api_client


def test_api_report(token_client, batch, django_assert_max_num_queries):
    with django_assert_max_num_queries(8):
        response = token_client.get(f"/api/batches/{batch.id}/preferences/")
    assert response.status_code == 200
    body = response.json()
    assert (body["labelled_by"], body["rankings"], body["raters"]) == ("models", 4, 2)
    assert body["left_out"] == [{"conversation": "p3", "why": "'models' has 1 names for 2 responses"}]
    pairs = body["tables"]["pairs"]["rows"]
    assert [(r["Model A"], r["Model B"], r["A wins"], r["Ties"], r["B wins"], r["A win rate (%)"]) for r in pairs] == [
        ("alpha", "beta", 2, 0, 2, 50.0), ("alpha", "gamma", 1, 1, 0, 75.0), ("beta", "gamma", 2, 0, 0, 100.0)]
    assert body["tables"]["kappa"]["rows"][0]["Kappa"] == -0.286
    assert body["exports"]["pairs"][0] == f"/api/batches/{batch.id}/preferences/pairs.csv"
    assert body["page"] == f"/research/batches/{batch.id}/preferences/"


@pytest.mark.parametrize("fmt, check", [
    ("csv", lambda text: list(csv.reader(io.StringIO(text)))[1][:8] == ["alpha", "beta", "2", "4", "2", "0", "2",
                                                                         "50.0"]),
    ("md", lambda text: "| alpha | beta | 2 | 4 | 2 | 0 | 2 | 50.0 |" in text),
    ("json", lambda text: '"A win rate (%)": 75.0' in text),
    ("tex", lambda text: r"\toprule" in text and "beta & gamma" in text),
])
def test_api_table_downloads(token_client, batch, fmt, check):
    response = token_client.get(f"/api/batches/{batch.id}/preferences/pairs.{fmt}")
    assert response.status_code == 200
    assert f'filename="pref-report-preference-pairs.{fmt}"' in response["Content-Disposition"]
    assert check(response.content.decode())


def test_api_access(api_client, batch, annotator, researcher):
    api_client.force_authenticate(annotator)
    denied = api_client.get(f"/api/batches/{batch.id}/preferences/")
    assert denied.status_code == 403 and "Only researchers" in denied.json()["detail"]
    stranger = UserFactory(username="other-researcher", role=User.Role.RESEARCHER)
    api_client.force_authenticate(stranger)  # a researcher who is not a member
    for url in (f"/api/batches/{batch.id}/preferences/", f"/api/batches/{batch.id}/preferences/pairs.csv"):
        response = api_client.get(url)
        assert response.status_code == 404 and "not a member" in response.json()["detail"]
    api_client.force_authenticate(None)
    assert api_client.get(f"/api/batches/{batch.id}/preferences/").status_code in (401, 403)


def test_api_bad_input(token_client, batch, tmp_path, researcher):
    unknown = token_client.get(f"/api/batches/{batch.id}/preferences/ranks.csv")
    assert unknown.status_code == 404 and "Unknown preference table 'ranks'" in unknown.json()["detail"]
    bad_format = token_client.get(f"/api/batches/{batch.id}/preferences/pairs.xlsx")
    assert bad_format.status_code == 400 and "expected one of csv, md, json, tex" in bad_format.json()["detail"]
    empty = import_preferences(tmp_path, RECORDS[:2], name="empty")
    empty.members.add(researcher)
    none_yet = token_client.get(f"/api/batches/{empty.id}/preferences/pairs.csv")
    assert none_yet.status_code == 400 and "no final rankings to report yet" in none_yet.json()["detail"]
    fire = Batch.objects.create(name="a-fire-batch", kind=Batch.Kind.FIRE)
    fire.members.add(researcher)
    wrong = token_client.get(f"/api/batches/{fire.id}/preferences/")
    assert wrong.status_code == 400
    assert "is a FIRE conversation rating batch; preference reports are for" in wrong.json()["detail"]


# --- pages ------------------------------------------------------------------------------------------


def test_page_is_reached_from_the_batch_report(client, batch, researcher):
    client.force_login(researcher)
    report = client.get(f"/research/batches/{batch.id}/").content.decode()
    assert f'href="/research/batches/{batch.id}/preferences/" id="preference-report-link"' in report
    html = client.get(f"/research/batches/{batch.id}/preferences/").content.decode()
    assert 'id="pairs-table"' in html and 'id="agreement-table"' in html and 'id="scores-table"' in html
    assert "<th scope=\"row\">alpha</th><td>beta</td>" in html and "75.0" in html
    assert f'href="/research/batches/{batch.id}/preferences/pairs.csv"' in html
    download = client.get(f"/research/batches/{batch.id}/preferences/scores.md")
    assert download.status_code == 200 and "| alpha | 4 | 4.00 |" in download.content.decode()


def test_page_access_and_errors(client, batch, annotator, researcher, tmp_path):
    client.force_login(annotator)
    assert client.get(f"/research/batches/{batch.id}/preferences/").status_code == 403
    client.force_login(UserFactory(username="other-researcher", role=User.Role.RESEARCHER))
    assert client.get(f"/research/batches/{batch.id}/preferences/").status_code == 404
    client.force_login(researcher)
    assert client.get(f"/research/batches/{batch.id}/preferences/ranks.csv").status_code == 404
    bad = client.get(f"/research/batches/{batch.id}/preferences/pairs.xlsx")
    assert bad.status_code == 400 and "expected one of csv, md, json, tex" in bad.content.decode()
    fire = Batch.objects.create(name="a-fire-batch", kind=Batch.Kind.FIRE)
    fire.members.add(researcher)
    wrong = client.get(f"/research/batches/{fire.id}/preferences/")
    assert wrong.status_code == 400 and "preference reports are for" in wrong.content.decode()
    empty = import_preferences(tmp_path, RECORDS[:2], name="empty")
    empty.members.add(researcher)
    html = client.get(f"/research/batches/{empty.id}/preferences/").content.decode()
    assert 'id="pairs-empty"' in html and "No final rankings yet." in html


def test_openapi_schema_has_the_preference_routes(token_client):
    response = token_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert "/api/batches/{batch_id}/preferences/" in paths
    table = paths["/api/batches/{batch_id}/preferences/{name}.{fmt}"]["get"]
    names = next(p for p in table["parameters"] if p["name"] == "name")["schema"]["enum"]
    assert sorted(names) == ["agreement", "kappa", "pairs", "scores"]  # the schema sorts enums
