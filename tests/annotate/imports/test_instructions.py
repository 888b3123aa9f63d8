"""A batch's instructions: Markdown given at import (command, form, API), rendered safely at the top of every item
and on the batch's start page."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from annotate.crowd.services import invite_token_create
from annotate.errors import ApplicationError
from annotate.imports.batches import MAX_INSTRUCTIONS_CHARS, batch_settings_apply
from annotate.models import Batch
from annotate.queue.services import assignment_next
from annotate.server.markdown import markdown_to_html
from tests.factories import ModelConfigFactory, UserFactory

pytestmark = pytest.mark.django_db

INSTRUCTIONS = """# Before you start
Tell the model **what** is wrong, never the answer.

<script>alert("x")</script> [a link](javascript:alert(1)) [the guide](https://example.org/guide)
"""


def test_markdown_is_rendered_without_raw_html_or_script_links():
    html = markdown_to_html(INSTRUCTIONS)
    assert "<h1>Before you start</h1>" in html and "<strong>what</strong>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="javascript:' not in html and 'href="https://example.org/guide"' in html


def test_import_command_takes_instructions_and_pages_show_them(sample_zip, tmp_path, client):
    ModelConfigFactory(name="replay")
    path = tmp_path / "instructions.md"
    path.write_text(INSTRUCTIONS, encoding="utf-8")
    call_command("import_batch", str(sample_zip), "--name", "with-help", "--models", "replay",
                 "--instructions", str(path), "--no-progress")
    batch = Batch.objects.get(name="with-help")
    assert batch.instructions == INSTRUCTIONS.strip()

    annotator = UserFactory(username="reader")
    session = assignment_next(annotator=annotator, batch=batch).session
    client.force_login(annotator)
    page = client.get(f"/annotate/sessions/{session.id}/").content.decode()
    assert 'id="instructions"' in page and "<h1>Before you start</h1>" in page and "<script>alert" not in page

    client.logout()
    start = client.get(f"/join/{invite_token_create(batch=batch)}/").content.decode()
    assert "<h1>Before you start</h1>" in start


def test_a_missing_file_and_too_long_instructions_are_errors(sample_zip, tmp_path):
    with pytest.raises(CommandError, match="--instructions"):
        call_command("import_batch", str(sample_zip), "--name", "x", "--instructions", str(tmp_path / "nope.md"),
                     "--no-progress")
    batch = Batch.objects.create(name="long")
    with pytest.raises(ApplicationError, match=r"settings\.instructions: 20,001 characters; at most 20,000"):
        batch_settings_apply(batch=batch, settings={"instructions": "x" * (MAX_INSTRUCTIONS_CHARS + 1)})
    batch.refresh_from_db()
    assert batch.instructions == ""
