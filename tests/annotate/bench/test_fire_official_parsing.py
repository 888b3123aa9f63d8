"""FIRE runs read teacher outputs as FIRE's official code does (``get_score`` / ``get_feedback``), score every
recorded student turn, compare against -1 where a reference score cannot be read, and end a free dialogue at an
unparseable score: every cell below is derived by hand and read back through the exports."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command

from annotate.bench import services
from annotate.bench.fire_parsing import feedback_for_student, fixed_dialogue_reading, official_score
from annotate.imports.batches import import_fire
from annotate.models import Batch, Conversation, FireRunTurn
from tests.annotate.bench.test_bench_engine import run_all
from tests.annotate.rating.fire.fire_data import turn, write_images_dir, write_json
from tests.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("text", "score", "feedback"), [
    ("Score: 7\nFeedback: Count the bars again.", 7.0, "Count the bars again."),
    ("Score: 7.5 out of 10\nFeedback: Close.", 7.0, "Close."),  # the first whole number
    ("Score: 12\nFeedback: Generous.", 12.0, "Generous."),  # kept, as the official code keeps it
    ("My Score: 6/10. Feedback: Look left.", 6.0, "Look left."),  # "Score:" anywhere on the first line
    ("Step 2, Score: 6\nFeedback: Look left.", 2.0, "Look left."),  # the first number, even before "Score:"
    ("score: 7\nFeedback: Lower case.", None, ""),  # "Score:" exactly as written
    ("Score：7\nFeedback: A full-width colon.", None, ""),
    ("Feedback: Score on the second line.\nScore: 8", None, ""),  # only the first line holds the score
    ("Score: seven\nFeedback: No digits.", None, ""),
    ("Score: 6\nNo feedback marker.", None, ""),  # a failure of either part fails both
    ("", None, ""),
])
def test_fixed_dialogue_reading_is_the_official_one(text, score, feedback):
    reading = fixed_dialogue_reading(text)
    assert (reading.score, reading.feedback) == (score, feedback)


def test_free_dialogues_read_the_score_alone_and_show_the_student_the_feedback_or_everything():
    assert official_score("Score: 6\nNo feedback marker.") == 6.0  # the loader calls get_score only
    assert feedback_for_student("Score: 6\nFeedback: Look left.") == "Look left."
    assert feedback_for_student("Score: 6\nLook left.") == "Score: 6\nLook left."  # get_feedback failed


# Recorded conversations (the references). Every feedback's words occur in no other reference, so each n-gram has
# CIDEr-D idf log(N / 1) > 0 and a feedback repeated word for word scores BLEU-1..4 = 1 and CIDEr-D = 10, while an
# empty one (a failed reading) scores 0 and 0.
RECORDED = {
    "c1": ["Maybe red is tallest", "Score: 3\nFeedback: count every single bar", "Now green seems tallest",
           "Score: 9\nFeedback: compare both axis labels"],
    "c2": ["Probably four small circles", "Score: 4\nFeedback: read legend colours first", "Actually five small circles",
           "Score: 8\nFeedback: zoom into lower corner"],
    # ends with a student response no teacher turn follows: FIRE's eval_feedback_student scores it too
    "c3": ["Blue ribbon wins here", "Score: 5\nFeedback: check title text carefully", "Green ribbon wins instead"],
    # a reference whose score cannot be read: FIRE's code records -1 for it and compares against that
    "c4": ["Cyan outline stands out", "Rating 5\nFeedback: mind tiny dashed outlines"],
}
# The teacher "t-slips", turn by turn, with the official reading (score, feedback) and the error against the
# reference:
TEACHER = {
    "c1": ["Score: 7.5 out of 10\nFeedback: count every single bar",  # 7, same feedback; |7 - 3| = 4
           "Score: 12\nFeedback: compare both axis labels"],  # 12 kept, same feedback; |12 - 9| = 3
    "c2": ["score: 4\nFeedback: read legend colours first",  # lower case: -1, ""; error 10
           "Feedback: zoom into lower corner\nScore: 8"],  # no score on line 1: -1, ""; error 10
    "c3": ["Score: 5"],  # no "Feedback:": -1, ""; error 10
    "c4": ["Score: 2\nFeedback: mind tiny dashed outlines"],  # 2 against the reference's -1: |2 - (-1)| = 3
}
# Table 3 for t-slips, by hand over its 6 turns: 2 feedbacks word for word, 4 empty or against an empty reference
# (c4's reference feedback cannot be read either, so it is "" and nothing matches it):
#   BLEU-1..4 = 2 / 6 = 0.33; CIDEr-D = (10 + 10) / 6 = 3.33; MAE = (4 + 3 + 10 + 10 + 10 + 3) / 6 = 40 / 6 = 6.67;
#   3 unparseable predicted scores (c2 twice, c3).
# The earlier lenient reading (any "score:" in any case, decimals kept, > 10 refused, the feedback kept when the
# score failed) gave: scores 7.5, None, 4, 8, 5, 2 against 3, 9, 4, 8, 5 (c4 left out): MAE (4.5 + 10) / 5 = 2.90,
# 1 unparseable.
TABLE_3_ROW = ["t-slips", "6", "0.33", "0.33", "0.33", "0.33", "3.33", "6.67", "3"]


def conversation_record(cid: str, texts: list[str]) -> dict:
    turns = [turn("student" if i % 2 == 0 else "teacher", text) for i, text in enumerate(texts)]
    return {"id": cid, "image": "bars_01.png", "img_path": "bars_01.png",
            "question": {"role": "user", "value": f"Question {cid}?"}, "groundtruth": {"role": "user",
                                                                                      "value": "green"},
            "conversations": turns, "source": "chartqa", "round": (len(turns) + 1) // 2, "split": "fire_test"}


@pytest.fixture
def slips_batch(tmp_path):
    records = [conversation_record(cid, texts) for cid, texts in RECORDED.items()]
    report = import_fire(write_json(tmp_path / "fire.json", records), name="fire-slips",
                         images=write_images_dir(tmp_path / "images"), overlap=1)
    assert report.status == "imported", report.render()
    for name in ("t-slips", "s-echo", "t-free", "s-a", "s-b"):
        ModelConfigFactory(name=name, backend="replay", backend_settings={"chunk_delay": 0})
    for conversation in Conversation.objects.filter(batch__name="fire-slips"):
        students = [t.text for t in conversation.turns.order_by("index") if t.role == "student"]
        recorded = {"t-slips": TEACHER[conversation.external_id], "s-echo": students}
        recorded.update(FREE[conversation.external_id])
        recorded.update({student: [f"Attempt {k}.\nAnswer: green" for k in range(5)] for student in ("s-a", "s-b")})
        conversation.metadata = {**conversation.metadata, "recorded_answers": recorded}
        conversation.save(update_fields=["metadata"])
    return Batch.objects.get(name="fire-slips")


def exported(capsys, table: str, fmt: str = "csv") -> str:
    call_command("export_tables", "--batch", "fire-slips", "--table", table, "--format", fmt)
    return capsys.readouterr().out


def csv_rows(text: str) -> list[list[str]]:
    return [row for row in csv.reader(io.StringIO(text)) if row]


def test_fixed_dialogues_parse_like_the_official_code_and_score_every_student_turn(slips_batch, capsys):
    run = services.fire_run_create(batch=slips_batch, protocol="fire_fixed", students="s-echo",
                                   teachers="t-slips", lanes=1, dispatch=False)
    run_all(run)
    scores = {(t.conversation.external_id, t.number): (t.score, t.reference_score)
              for t in FireRunTurn.objects.filter(run=run, role="teacher")}
    assert scores == {("c1", 1): (7.0, 3.0), ("c1", 2): (12.0, 9.0), ("c2", 1): (None, 4.0),
                      ("c2", 2): (None, 8.0), ("c3", 1): (None, 5.0), ("c4", 1): (2.0, None)}

    rows = csv_rows(exported(capsys, "fire-fixed"))
    # Table 2: s-echo repeats all 7 recorded student turns (c3's last one included), word for word: BLEU 1, CIDEr
    # 10 (each response has a word no other has).
    assert ["s-echo", "7", "1.00", "1.00", "1.00", "1.00", "10.00"] in rows
    assert TABLE_3_ROW in rows
    markdown = exported(capsys, "fire-fixed", "md")
    assert "| t-slips | 6 | 0.33 | 0.33 | 0.33 | 0.33 | 3.33 | 6.67 | 3 |" in markdown
    assert "-1" in markdown and "unparseable reference" in markdown.lower()


# Free dialogues: what the teacher t-free answers each student, turn by turn. The dialogue ends after a turn whose
# score (official get_score) reaches 8, is 0 or cannot be read (FIRE's runner sets it to 0 and stops), or does not
# rise, or at n_max = 5.
FREE = {
    "c1": {"t-free@s-a": ["Score: 6.5\nFeedback: f", "Score: 8\nFeedback: f"],  # 6, 8: solved at turn 2
           "t-free@s-b": ["Score: 3\nFeedback: f", "Score: 9\nFeedback: f"]},  # 3, 9: solved at 2
    "c2": {"t-free@s-a": ["I cannot grade this.", "Score: 9\nFeedback: f"],  # unreadable at turn 1: ends there
           "t-free@s-b": ["Score: 8\nFeedback: f"]},  # solved at turn 1: removed
    "c3": {"t-free@s-a": ["Score: 0\nFeedback: f", "Score: 5\nFeedback: f"],  # 0 at turn 1: ends there
           "t-free@s-b": ["Score: 4\nFeedback: f", "Score: 3\nFeedback: f"]},  # does not rise: ends at 2
    "c4": {"t-free@s-a": ["Score: 12\nFeedback: f"],  # 12 >= 8 at turn 1: removed
           "t-free@s-b": [f"Score: {s}\nFeedback: f" for s in (5, 6, 7, 8)]},  # solved at 4
}
# Table 4, by hand (threshold 8, n_max 5, punishment 10; baseline s-b):
# s-b: n_k 2 (c1), removed (c2), 10 (c3), 4 (c4): AT raw (2 + 10 + 4) / 3 = 16/3 -> 1.00.
#   ADR (6 - 1 + 3) / 3 = 2.67; ATR (6 / 1 - 1 / 1 + 3 / 3) / 3 = 2.00; RR (1 + 0 + 1) / 3 = 0.67.
# s-a: n_k 2 (c1), 10 (c2: no score), 10 (c3: 0 never reaches 8), removed (c4): AT (22/3) / (16/3) = 1.375 -> 1.38.
#   Only c1 has two scored turns: ADR 8 - 6 = 2.00, ATR 2.00, RR 1.00.
FREE_SCORES = {("c1", "s-a"): [6.0, 8.0], ("c2", "s-a"): [None], ("c3", "s-a"): [0.0], ("c4", "s-a"): [12.0],
               ("c1", "s-b"): [3.0, 9.0], ("c2", "s-b"): [8.0], ("c3", "s-b"): [4.0, 3.0],
               ("c4", "s-b"): [5.0, 6.0, 7.0, 8.0]}


def test_free_dialogues_stop_as_fires_runner_and_parse_scores_officially(slips_batch, capsys):
    run = services.fire_run_create(batch=slips_batch, protocol="fire_free", students="s-a,s-b",
                                   teachers="t-free", baseline="s-b", lanes=2, dispatch=False)
    run_all(run)
    scores: dict[tuple[str, str], list] = {}
    for t in FireRunTurn.objects.filter(run=run, role="teacher").order_by("number"):
        scores.setdefault((t.conversation.external_id, t.student.name), []).append(t.score)
    assert scores == FREE_SCORES

    rows = csv_rows(exported(capsys, "fire-free"))
    assert ["s-a", "t-free", "4", "1.38", "2.00", "2.00", "1.00"] in rows
    assert ["s-b", "t-free", "4", "1.00", "2.67", "2.00", "0.67"] in rows
    document = json.loads(exported(capsys, "fire-free", "json"))
    assert any("is 0 or cannot be read" in note for note in document[0]["notes"])


def test_each_fire_run_has_its_own_tables_by_command_page_and_api(slips_batch, capsys, client):
    from annotate.models import User
    from tests.factories import UserFactory

    students = services.fire_run_create(batch=slips_batch, protocol="fire_fixed", students="s-echo", teachers="",
                                        lanes=1, dispatch=False)
    run_all(students)
    teachers = services.fire_run_create(batch=slips_batch, protocol="fire_fixed", students="", teachers="t-slips",
                                        lanes=1, dispatch=False)
    run_all(teachers)
    latest = csv_rows(exported(capsys, "fire-fixed"))
    assert TABLE_3_ROW in latest and latest[0][0] == "Teacher"  # the latest finished run: Table 3 only
    call_command("export_tables", "--table", "fire-fixed", "--format", "csv", "--run", str(students.pk))
    chosen = capsys.readouterr().out
    assert csv_rows(chosen)[0][0] == "Student" and ["s-echo", "7", "1.00", "1.00", "1.00", "1.00", "10.00"] in \
        csv_rows(chosen)

    researcher = UserFactory(username="rita", role=User.Role.RESEARCHER)
    slips_batch.members.add(researcher)
    client.force_login(researcher)
    page = client.get(f"/research/bench/{students.pk}/").content.decode()
    assert f'href="/research/bench/{students.pk}/table.csv"' in page
    assert client.get(f"/research/bench/{students.pk}/table.csv").content.decode() == chosen
    tables = client.get(f"/api/bench-runs/{teachers.pk}/table.json").json()
    assert [t["title"].split(",")[0] for t in tables] == ["FIRE fixed dialogues: teachers (Table 3)"]
