"""Styled 403 and 404 pages: the navigation, a sentence saying why, and no traceback logged for a plain denial."""

import logging

import pytest

from annotate.models import User
from annotate.queue.services import assignment_next
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


def test_a_page_that_is_not_yours_is_a_styled_404(client):
    owner, other = UserFactory(username="owner"), UserFactory(username="other")
    session = assignment_next(annotator=owner, batch=make_batch(models=[ModelConfigFactory()])).session
    client.force_login(other)
    response = client.get(f"/annotate/sessions/{session.id}/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "This page does not exist" in html and f"/annotate/sessions/{session.id}/" in html
    assert 'aria-label="Main"' in html and "Back to your work" in html  # the navigation and a way out
    assert "favicon.svg" in html


def test_a_denied_page_says_why_and_logs_no_traceback(client, caplog):
    client.force_login(UserFactory(username="annie", role=User.Role.ANNOTATOR))
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.get("/imports/new/")
    assert response.status_code == 403
    html = response.content.decode()
    assert "You cannot open this page" in html and "Only admins may import batches." in html
    assert 'aria-label="Main"' in html
    denials = [r for r in caplog.records if r.name == "django.request"]
    assert denials and all(r.exc_info is None and "Traceback" not in r.getMessage() for r in denials)
    assert "Forbidden" in denials[0].getMessage()  # the one-line warning stays


def test_api_paths_keep_json_errors(client):
    client.force_login(UserFactory(username="jay"))
    response = client.get("/api/sessions/abc/")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
