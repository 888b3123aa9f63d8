"""A FIRE batch's report tables as batch exports: every table the FIRE report page shows (Table A1, means per split,
source and turn, agreement, kappa, disagreements) from /api/batches/<id>/tables/<name>.<fmt>, `export_tables` and
the report's download list, byte for byte what `export_fire` writes."""

import csv
import io
import json
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotate.models import User
from evaluation.exports import registry as exports
from evaluation.exports.renderers.tables import render
from evaluation.fire import reports as fire_reports
from evaluation.fire.registration import FIRE_RATING_EXPORTS
from tests.evaluation.fire.test_fire_reports import rate_all
from tests.factories import UserFactory, make_batch

pytestmark = pytest.mark.django_db

FIRE_EXPORTS = ["fire-ratings", "fire-summary-split", "fire-summary-source", "fire-summary-turn", "fire-agreement",
                "fire-kappa", "fire-disagreements"]


@pytest.fixture
def rita(fire_batch):
    user = UserFactory(username="rita-fire", role=User.Role.RESEARCHER)
    fire_batch.members.add(user)
    return user


@pytest.fixture
def rated(fire_batch, raters):
    rate_all(raters)
    return fire_batch


def _export_fire(batch, what, by, fmt, capsys) -> str:
    call_command("export_fire", "--batch", batch.name, "--what", what, "--by", by, "--format", fmt)
    return capsys.readouterr().out


def test_every_fire_table_is_an_export():
    assert [name for name in exports.EXPORTS if name in FIRE_RATING_EXPORTS] == FIRE_EXPORTS
    assert all(exports.EXPORTS[name] == ("csv", "md", "tex", "json") for name in FIRE_EXPORTS)


@pytest.mark.parametrize("name", FIRE_EXPORTS)
@pytest.mark.parametrize("fmt", ["csv", "md", "tex", "json"])
def test_api_and_command_give_what_export_fire_writes(api_client, rated, rita, capsys, name, fmt):
    what, by = FIRE_RATING_EXPORTS[name]
    expected = _export_fire(rated, what, by, fmt, capsys)
    api_client.force_authenticate(rita)
    response = api_client.get(f"/api/batches/{rated.id}/tables/{name}.{fmt}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == exports.CONTENT_TYPES[fmt]
    assert f'filename="fire-sample-{name}.{fmt}"' in response["Content-Disposition"]
    assert response.content.decode() == expected
    call_command("export_tables", "--batch", rated.name, "--table", name, "--format", fmt)
    assert capsys.readouterr().out == expected


def test_the_numbers(api_client, rated, rita):
    """Hand-computed in test_fire_reports: per source chartqa feedback 25/6 = 4.17, responses 8/3 = 2.67."""
    api_client.force_authenticate(rita)
    by_source = list(csv.reader(io.StringIO(
        api_client.get(f"/api/batches/{rated.id}/tables/fire-summary-source.csv").content.decode())))
    assert by_source[0] == ["Source", "Kind", "N", "Mean", "95% CI low", "95% CI high"]
    assert [row[:4] for row in by_source[1:3]] == [["chartqa", "feedback", "6", "4.17"],
                                                   ["chartqa", "response", "3", "2.67"]]
    by_turn = json.loads(api_client.get(f"/api/batches/{rated.id}/tables/fire-summary-turn.json").content)
    assert [(row["Turn"], row["Mean"]) for row in by_turn["rows"]][:2] == [(2, 4.17), (3, 3.17)]  # as rated
    agreement = json.loads(api_client.get(f"/api/batches/{rated.id}/tables/fire-agreement.json").content)
    everything = agreement["rows"][0]
    assert (everything["Scope"], everything["Items"], everything["Raters"], everything["Ratings"]) == (
        "All", 8, 3, 24)
    alpha = fire_reports.fire_agreement(rated)[0]["alpha_interval"]
    assert Decimal(str(everything["Alpha (interval)"])) == round(Decimal(alpha), 3)
    kappa = json.loads(api_client.get(f"/api/batches/{rated.id}/tables/fire-kappa.json").content)
    assert len([row for row in kappa["rows"] if row["Scope"] == "All"]) == 3  # three rater pairs
    disputed = api_client.get(f"/api/batches/{rated.id}/tables/fire-disagreements.md").content.decode()
    assert disputed == render(fire_reports.fire_disagreements_table(rated), "md")


def test_the_report_lists_the_fire_downloads_and_they_serve_the_tables(client, rated, rita, capsys):
    client.force_login(rita)
    html = client.get(f"/research/batches/{rated.id}/").content.decode()
    for name in FIRE_EXPORTS:
        assert f'href="/research/batches/{rated.id}/export/{name}.csv"' in html, name
    assert "/export/accuracy." not in html and "/export/fig4." not in html
    page = client.get(f"/research/batches/{rated.id}/export/fire-kappa.tex")
    assert page.status_code == 200 and page.content.decode() == _export_fire(rated, "kappa", "split", "tex", capsys)


def test_errors(api_client, fire_batch, rita, outsider, researcher):
    api_client.force_authenticate(rita)
    none_yet = api_client.get(f"/api/batches/{fire_batch.id}/tables/fire-agreement.csv")
    assert none_yet.status_code == 400 and "has no final FIRE ratings" in none_yet.json()["detail"]
    bad = api_client.get(f"/api/batches/{fire_batch.id}/tables/fire-kappa.png")
    assert bad.status_code == 400 and "expected one of csv, md, tex, json" in bad.json()["detail"]
    assert api_client.get(f"/api/batches/{fire_batch.id}/tables/fire-nope.csv").status_code == 404
    api_client.force_authenticate(outsider)
    assert api_client.get(f"/api/batches/{fire_batch.id}/tables/fire-kappa.csv").status_code == 403
    api_client.force_authenticate(researcher)  # not a member
    assert api_client.get(f"/api/batches/{fire_batch.id}/tables/fire-kappa.csv").status_code == 404
    interfeedback = make_batch(models=[], tasks=0, members=[researcher])
    not_fire = api_client.get(f"/api/batches/{interfeedback.id}/tables/fire-summary-turn.csv")
    assert not_fire.status_code == 400 and "has no final FIRE ratings" in not_fire.json()["detail"]
    with pytest.raises(CommandError, match="has no final FIRE ratings"):
        call_command("export_tables", "--batch", fire_batch.name, "--table", "fire-disagreements", "--format", "md")
