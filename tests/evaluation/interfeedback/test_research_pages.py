"""Researcher pages: access, the report's tables and figures, downloads, session browser and transcripts."""

from __future__ import annotations

import re

import pytest

from annotate.models import ModelConfig, Session, User
from evaluation.interfeedback import services
from tests.evaluation.builders import sessions_from_counts
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch(researcher, annotator):
    model = ModelConfigFactory(name="gpt-4o", backend=ModelConfig.Backend.REPLAY)
    batch = make_batch(models=[model], tasks=0, members=[researcher])
    sessions_from_counts(batch, model, "Visual Logic", (17, 9, 5, 3), 80, annotators=(annotator,), with_rounds=True)
    services.outcome_recompute(batch_id=batch.id)
    return batch


def _table(html: str, table_id: str) -> str:
    return re.search(rf'<table[^>]*id="{table_id}".*?</table>', html, re.S).group(0)


def _cells(html: str, table_id: str) -> list[list[str]]:
    """The cells as shown, without the n per cell (hidden until asked for)."""
    table = re.sub(r'<span class="cell-n".*?</span>', "", _table(html, table_id), flags=re.S)
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
    return [[re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
            for row in rows]


def _n_per_cell(html: str, table_id: str) -> list[str]:
    return re.findall(r'<span class="cell-n" data-n="([^"]*)"', _table(html, table_id))


def test_batch_list_links_to_reports(client, researcher, batch):
    client.force_login(researcher)
    html = client.get("/research/").content.decode()
    assert f'href="/research/batches/{batch.id}/"' in html and f"/research/batches/{batch.id}/sessions/" in html


def test_report_page_shows_both_tables_figures_breakdown_and_downloads(
    client, researcher, annotator, batch, django_assert_max_num_queries
):
    client.force_login(researcher)
    with django_assert_max_num_queries(12):  # 2 for the capacity notice: who may work on it, what they gave up
        response = client.get(f"/research/batches/{batch.id}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert _cells(html, "accuracy-table") == [["Model", "Visual Logic", "Average"], ["gpt-4o", "21.3", "21.3"]]
    assert _cells(html, "correction-table")[1:] == [
        ["gpt-4o", "1", "14.3", "14.3"], ["gpt-4o", "2", "7.9", "7.9"], ["gpt-4o", "3", "4.8", "4.8"]]
    # n per cell behind its toggle: 17 of 80 right in round 0; 9, 5, 3 of the 63 wrong corrected in rounds 1-3
    assert _n_per_cell(html, "accuracy-table") == ["17/80", "17/80"]
    assert _n_per_cell(html, "correction-table") == ["9/63", "9/63", "5/63", "5/63", "3/63", "3/63"]
    assert 'id="accuracy-table-show-n"' in html and 'id="correction-table-show-n"' in html
    assert _cells(html, "annotator-table")[1] == [annotator.pseudonym, "80", "21.3", "14.3", "7.9", "4.8", "46"]
    assert annotator.username not in html  # pseudonyms only
    assert f'src="/research/batches/{batch.id}/export/fig4.svg"' in html
    for name, fmt in [("accuracy", "csv"), ("accuracy", "tex"), ("correction", "md"), ("correction", "json"),
                      ("fig5", "png"), ("sessions", "jsonl"), ("sessions", "fire")]:
        assert f"/research/batches/{batch.id}/export/{name}.{fmt}" in html


def test_the_model_filter_names_models_by_display_name(client, researcher, batch):
    ModelConfig.objects.filter(name="gpt-4o").update(display_name="GPT-4o (OpenAI)")
    client.force_login(researcher)
    html = client.get(f"/research/batches/{batch.id}/", {"model": "gpt-4o"}).content.decode()
    assert '<option value="gpt-4o" selected>GPT-4o (OpenAI)</option>' in html  # the slug stays the value
    assert _cells(html, "accuracy-table")[1] == ["GPT-4o (OpenAI)", "21.3", "21.3"]  # filtered by slug, as the table


def test_an_interfeedback_report_offers_its_own_actions(client, researcher, batch):
    client.force_login(researcher)
    html = client.get(f"/research/batches/{batch.id}/").content.decode()
    for action in ("recount", "sessions", "quality", "invites", "study", "participants", "dashboard"):
        assert f'id="action-{action}"' in html, action
    assert 'id="sessions-export"' in html and "counted sessions" in html


def test_report_filters_carry_into_links_and_bad_filters_are_shown(client, researcher, batch):
    client.force_login(researcher)
    html = client.get(f"/research/batches/{batch.id}/", {"category": "Visual Logic"}).content.decode()
    assert "export/accuracy.csv?category=Visual+Logic" in html
    bad = client.get(f"/research/batches/{batch.id}/", {"date_from": "yesterday"})
    assert bad.status_code == 200 and "Enter a valid date" in bad.content.decode()
    unknown = client.get(f"/research/batches/{batch.id}/", {"annotator": "ann-nobody"}).content.decode()
    assert "No annotator with pseudonym" in unknown


def test_figure_and_download_views(client, researcher, batch):
    client.force_login(researcher)
    svg = client.get(f"/research/batches/{batch.id}/export/fig4.svg")
    assert svg.status_code == 200 and svg["Content-Type"] == "image/svg+xml" and b"<svg" in svg.content
    csv = client.get(f"/research/batches/{batch.id}/export/accuracy.csv")
    assert csv.content.decode().splitlines()[1] == "gpt-4o,21.3,17,80,21.3,17,80"
    assert client.get(f"/research/batches/{batch.id}/export/accuracy.xls").status_code == 400
    assert client.get(f"/research/batches/{batch.id}/export/nothing.csv").status_code == 404


def test_access_annotator_403_non_member_404(client, annotator, batch):
    client.force_login(annotator)
    for url in ("/research/", f"/research/batches/{batch.id}/", f"/research/batches/{batch.id}/sessions/",
                f"/research/batches/{batch.id}/export/accuracy.csv"):
        assert client.get(url).status_code == 403, url
    client.force_login(UserFactory(username="rachel", role=User.Role.RESEARCHER))
    assert client.get(f"/research/batches/{batch.id}/").status_code == 404
    assert client.get("/research/batches/999999/").status_code == 404
    client.logout()
    assert client.get(f"/research/batches/{batch.id}/").status_code == 302  # to the login page


def test_session_browser_and_transcript(client, researcher, annotator, batch, django_assert_max_num_queries):
    client.force_login(researcher)
    with django_assert_max_num_queries(9):
        response = client.get(f"/research/batches/{batch.id}/sessions/", {"outcome": "3"})
    html = response.content.decode()
    assert "3 completed sessions" in html
    assert len(_cells(html, "session-table")) == 1 + 3
    session = Session.objects.filter(batch=batch, corrected_round=3).first()
    page = client.get(f"/research/batches/{batch.id}/sessions/{session.id}/").content.decode()
    for text in ("Round 3", "Feedback 2", "Answer: 3", "corrected in round 3", annotator.pseudonym, "latency 103 ms"):
        assert text in page, text
    other = make_batch(models=[], tasks=0, members=[researcher])
    assert client.get(f"/research/batches/{other.id}/sessions/{session.id}/").status_code == 404


def test_recompute_button_queues_a_job(client, researcher, batch, monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr("annotate.queue_contract.send_task", lambda name, args, **kw: sent.append(args))
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/research/batches/{batch.id}/recompute/")
    assert response.status_code == 302 and len(sent) == 1


def test_session_export_streams_under_asgi(researcher, batch):
    """Under daphne the JSONL export is an async stream (Django would otherwise buffer a sync one whole)."""
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    client = AsyncClient()

    async def fetch():
        await client.aforce_login(researcher)
        response = await client.get(f"/research/batches/{batch.id}/export/sessions.jsonl")
        assert response.is_async
        return response, [chunk async for chunk in response.streaming_content]

    response, chunks = async_to_sync(fetch)()
    assert response.status_code == 200
    lines = b"".join(chunks).decode().splitlines()
    assert len(lines) == 80 and len(chunks) == 1  # 80 sessions < one batch of 200 lines
