"""A preference batch's own researcher pages: the batch report shows its judgments' progress and downloads (no
InterFeedback tables, counters or session actions), and the quality page lists every rater with preference
measures. Counts hand-derived from the study's plan (tests/evaluation/preference/study.py)."""

from __future__ import annotations

import pytest

from evaluation.preference.quality import preference_quality

pytestmark = pytest.mark.django_db


def test_batch_report_shows_the_preference_section_not_interfeedback(client, study, researcher):
    client.force_login(researcher)
    html = client.get(f"/research/batches/{study.id}/").content.decode()
    # 3 items x 3 raters = 9 needed; 8 final rankings (r2 skipped q3); nothing in progress.
    for name, value in (("items", 3), ("rated-items", 3), ("rankings", 8), ("needed", 9), ("in-progress", 0),
                        ("left", 1), ("raters", 3), ("skips", 1)):
        assert f'<dd id="preference-{name}">{value}</dd>' in html, name
    assert f'href="/research/batches/{study.id}/preferences/" id="preference-report-link"' in html
    for absent in ("counted session", "counters never updated", 'id="accuracy-table"', 'id="sessions-export"',
                   "Recount all sessions", 'id="annotator-table"'):
        assert absent not in html, absent
    assert f'href="/research/batches/{study.id}/export/preference-dpo.jsonl"' in html
    assert f'href="/research/batches/{study.id}/export/preference-responses.csv"' in html
    download = client.get(f"/research/batches/{study.id}/export/preference-dpo.jsonl")
    assert download.status_code == 200 and b'"chosen"' in b"".join(download.streaming_content)


def test_preference_report_page_links_the_raw_exports(client, study, researcher):
    client.force_login(researcher)
    html = client.get(f"/research/batches/{study.id}/preferences/").content.decode()
    assert f'href="/research/batches/{study.id}/export/preference-responses.jsonl"' in html
    assert f"GET /api/batches/{study.id}/tables/preference-dpo.jsonl" in html


def test_quality_lists_every_rater_with_preference_measures(client, study, researcher):
    rows = {r.pseudonym: r for r in preference_quality(study)["raters"]}
    assert list(rows) == ["ann-r1", "ann-r2", "ann-r3"]
    assert [(r.served, r.finished, r.skipped, r.in_progress) for r in rows.values()] == [
        (3, 3, 0, 0), (3, 2, 1, 0), (3, 3, 0, 0)]
    assert rows["ann-r2"].skip_reasons == [("The question is unclear.", 1)]
    # r1 ranks q3 2>3>1 although candidate 3 (5, 5, 5) beats candidate 2 (1, 1, 5) everywhere: one contradiction.
    assert [r.contradictions for r in rows.values()] == [1, 0, 0]
    assert [r.same_scores for r in rows.values()] == [0, 0, 0]
    # r1's reasons under 10 characters: Partly. No. Honest. Bare. Wrong. Explains.
    assert (rows["ann-r1"].ratings, rows["ann-r1"].blank_reasons, rows["ann-r1"].short_reasons) == (9, 0, 6)
    assert all(r.agreement is not None and r.median_seconds is not None for r in rows.values())
    client.force_login(researcher)
    html = client.get(f"/research/batches/{study.id}/quality/").content.decode()
    assert "Rater quality" in html and html.count('<th scope="row">') == 3
    assert "Sessions completed" not in html and "The question is unclear." in html
