"""python manage.py export_tables (and recompute_outcomes)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Conversation, ModelConfig, Rating
from tests.evaluation.builders import sessions_from_counts
from tests.factories import BatchFactory, ModelConfigFactory, make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch(annotator):
    model = ModelConfigFactory(name="gpt-4o", backend=ModelConfig.Backend.REPLAY)
    batch = make_batch(models=[model], tasks=0)
    batch.name = "pilot"
    batch.save()
    sessions_from_counts(batch, model, "Visual Logic", (17, 9, 5, 3), 80, annotators=(annotator,), with_rounds=True)
    sessions_from_counts(batch, model, "Math (Text)", (1, 2, 0, 1), 16, annotators=(annotator,), with_rounds=True)
    out = io.StringIO()
    call_command("recompute_outcomes", batch="pilot", stdout=out)
    assert out.getvalue().startswith("Counted 96 sessions of 'pilot'")
    return batch


def _run(*args) -> str:
    out = io.StringIO()
    call_command("export_tables", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_markdown_to_stdout(batch):
    text = _run("--batch", "pilot", "--table", "accuracy", "--format", "md")
    assert "| gpt-4o | 6.3 | 21.3 | 18.8 |" in text  # 18/96 = 18.75 -> 18.8, pooled


def test_files_and_filters(batch, tmp_path):
    target = tmp_path / "t4.csv"
    _run("--batch", "pilot", "--table", "correction", "--format", "csv", "--out", str(target),
         "--category", "Math (Text)")
    # Each value with the sessions behind it: k first corrected in that round of n = 16 - 1 = 15 wrong in round 0
    assert target.read_text().splitlines() == [
        "Model,# Round,Math (Text),Math (Text) (k),Math (Text) (n),Average,Average (k),Average (n)",
        "gpt-4o,1,13.3,2,15,13.3,2,15", "gpt-4o,2,0.0,0,15,0.0,0,15", "gpt-4o,3,6.7,1,15,6.7,1,15"]
    png = tmp_path / "fig4.png"
    _run("--batch", "pilot", "--table", "fig4", "--format", "png", "--out", str(png))
    assert png.read_bytes().startswith(b"\x89PNG")
    _run("--batch", "pilot", "--table", "accuracy", "--format", "png", "--out", str(png))
    assert png.read_bytes().startswith(b"\x89PNG")
    assert "<svg" in _run("--batch", "pilot", "--table", "correction", "--format", "svg")
    assert r"\toprule" in _run("--batch", "pilot", "--table", "accuracy", "--format", "tex")


def test_sessions_jsonl_and_fire(batch, annotator):
    lines = _run("--batch", "pilot", "--table", "sessions", "--format", "jsonl").splitlines()
    assert len(lines) == 96
    first = json.loads(lines[0])
    assert first["annotator"] == annotator.pseudonym and first["model"] == "gpt-4o" and first["rounds"]
    fire = [json.loads(line) for line in _run("--batch", "pilot", "--table", "sessions", "--format", "fire",
                                              "--outcome", "0").splitlines()]
    assert len(fire) == 18 and fire[0]["conversations"] == [{"role": "student", "type": "response",
                                                             "value": "Answer: 0"}]


@pytest.mark.parametrize(("args", "message"), [
    (["--batch", "nope", "--table", "accuracy", "--format", "md"], "No batch named 'nope'."),
    (["--batch", "pilot", "--table", "fig4", "--format", "csv"], "Unknown format 'csv' for fig4"),
    (["--batch", "pilot", "--table", "accuracy", "--format", "png"], "PNG is binary: give --out FILE."),
    (["--batch", "pilot", "--table", "fire-ratings", "--format", "csv"], "FIRE ratings"),
    (["--batch", "pilot", "--table", "accuracy", "--format", "md", "--date-from", "2025-13-01"], "date_from"),
])
def test_clear_errors(batch, args, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(")):
        _run(*args)


def test_empty_batch_exports_an_empty_table():
    BatchFactory(name="empty")
    assert _run("--batch", "empty", "--table", "accuracy", "--format", "csv") == "Model,Average\r\n"
    with pytest.raises(CommandError, match="No counted sessions to plot"):
        _run("--batch", "empty", "--table", "fig5", "--format", "svg")


def test_fire_ratings_table(annotator):
    """FIRE Table A1 from final ratings (built by evaluation.fire.reports)."""
    batch = BatchFactory(name="fire-pilot", kind="fire")
    conversation = Conversation.objects.create(batch=batch, external_id="c1", question="Q?", split="test")
    scores = {("feedback", 1): 4, ("response", 2): 2, ("feedback", 3): 5}
    for (kind, index), score in scores.items():
        turn = conversation.turns.create(index=index, role="teacher" if kind == "feedback" else "student",
                                         kind=kind, text="…", is_rateable=True)
        Rating.objects.create(turn=turn, annotator=annotator, score=score, is_final=True)
    rows = _run("--batch", "fire-pilot", "--table", "fire-ratings", "--format", "csv").splitlines()
    assert rows[0] == "Split,#Feedback,Feedback,Feedback 95% CI,#Response,Response,Response 95% CI"
    assert rows[1].startswith("test,2,4.50,") and ",1,2.00," in rows[1]
