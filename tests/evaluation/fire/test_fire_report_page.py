"""A FIRE batch's report page: Table A1, means per source and turn, agreement (alpha ordinal and interval),
pairwise kappa and the disagreements, with the numbers `export_fire` gives and working downloads; no
InterFeedback tables or figures; clear sentences when there are no ratings or a single rater."""

import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotate.models import User
from evaluation.exports.renderers.tables import render
from evaluation.fire import reports as fire_reports
from tests.evaluation.fire.test_fire_reports import SCORES, rate_all
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def rita(fire_batch):
    user = UserFactory(username="rita-fire", role=User.Role.RESEARCHER)
    fire_batch.members.add(user)
    return user


def test_the_report_shows_every_fire_table_and_no_interfeedback_one(client, fire_batch, raters, rita, capsys):
    rate_all(raters)
    client.force_login(rita)
    html = client.get(reverse("research-report", args=[fire_batch.id])).content.decode()
    for section in ("fire-table-a1-split", "fire-summary-source", "fire-summary-turn", "fire-agreement-split",
                    "fire-kappa-split", "fire-disagreements-split"):
        assert f'id="{section}-table"' in html, section
    assert 'id="accuracy-table"' not in html and 'id="correction-table"' not in html and "fig4" not in html
    assert "4.27" in html and "3.67" in html  # Table A1's "All" row (hand-computed in test_fire_reports)
    call_command("export_fire", "--batch", fire_batch.name, "--what", "agreement", "--format", "md")
    command_md = capsys.readouterr().out
    page_md = client.get(reverse("research-fire-export", args=[fire_batch.id, "agreement", "md"])).content.decode()
    assert page_md == command_md  # the download is what export_fire writes
    alpha = str(fire_reports.fire_agreement(fire_batch)[0]["alpha_ordinal"].__round__(3))
    assert alpha in html


def test_the_report_offers_fire_actions_only(client, fire_batch, raters, rita):
    """No InterFeedback-only buttons or text on a FIRE report: nothing about counted sessions, no recount, no
    session browser, export or download (its kind declares its actions: evaluation.kinds)."""
    rate_all(raters)
    client.force_login(rita)
    html = client.get(reverse("research-report", args=[fire_batch.id])).content.decode()
    for action in ("invites", "study", "participants", "dashboard"):
        assert f'id="action-{action}"' in html, action
    for absent in ('id="action-recount"', 'id="action-sessions"', 'id="action-quality"', 'id="sessions-export"',
                   "counted session", "counters never updated", "Export sessions", "/export/sessions.",
                   "Recount all sessions"):
        assert absent not in html, absent


@pytest.mark.parametrize("what,fmt,by", [("table-a1", "csv", "split"), ("summary", "tex", "turn"),
                                         ("kappa", "json", "split"), ("disagreements", "md", "split"),
                                         ("ratings", "csv", "split")])
def test_each_download_is_the_table(client, fire_batch, raters, rita, what, fmt, by):
    rate_all(raters)
    client.force_login(rita)
    response = client.get(reverse("research-fire-export", args=[fire_batch.id, what, fmt]) + f"?by={by}")
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    expected = render(fire_reports.FIRE_TABLES[what](fire_batch, by=by), fmt)
    assert response.content.decode() == expected


def test_rated_conversations_as_fire_json(client, fire_batch, raters, rita):
    rate_all(raters)
    client.force_login(rita)
    records = json.loads(client.get(reverse("research-fire-export",
                                            args=[fire_batch.id, "conversations", "json"])).content)
    assert {r["id"] for r in records} == set(SCORES["rater1"])


def test_no_ratings_and_a_single_rater_are_said_plainly(client, fire_batch, raters, rita):
    client.force_login(rita)
    html = client.get(reverse("research-report", args=[fire_batch.id])).content.decode()
    assert "has no final FIRE ratings to report yet" in html and 'id="fire-table-a1-split-table"' not in html
    rate_all(raters[:1])
    html = client.get(reverse("research-report", args=[fire_batch.id])).content.decode()
    assert 'id="fire-table-a1-split-table"' in html and "needs at least two raters" in html


def test_only_the_batch_researchers(client, fire_batch):
    client.force_login(UserFactory(role=User.Role.RESEARCHER))
    assert client.get(reverse("research-fire-export", args=[fire_batch.id, "table-a1", "md"])).status_code == 404
    client.force_login(UserFactory(role=User.Role.ANNOTATOR))
    assert client.get(reverse("research-fire-export", args=[fire_batch.id, "table-a1", "md"])).status_code == 403


def test_unknown_exports_and_an_interfeedback_batch_are_404(client, fire_batch, rita, simulated_model):
    from tests.factories import make_batch

    client.force_login(rita)
    assert client.get(reverse("research-fire-export", args=[fire_batch.id, "nope", "md"])).status_code == 404
    assert client.get(reverse("research-fire-export", args=[fire_batch.id, "table-a1", "png"])).status_code == 404
    other = make_batch(models=[simulated_model], members=[rita])
    assert client.get(reverse("research-fire-export", args=[other.id, "table-a1", "md"])).status_code == 404
    html = client.get(reverse("research-report", args=[other.id])).content.decode()
    assert 'id="accuracy-table"' in html and "fire-table-a1" not in html
