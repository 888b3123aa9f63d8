"""FIRE fixed and free dialogues run by the app with replay models built so that every cell of small Tables 2-5
is known; the parsing of teacher turns; resume without redoing a turn."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotate.bench import services
from annotate.bench.fire_engine import teacher_feedback, teacher_score
from annotate.errors import ApplicationError
from annotate.imports.batches import import_fire
from annotate.models import Batch, BenchRun, Conversation, FireRunTurn
from evaluation.fire.metrics import bleu_scores
from evaluation.fire.runs import free_tables, student_table, teacher_table
from evaluation.metrics import round_half_up
from tests.annotate.bench.test_bench_engine import run_all
from tests.annotate.fire.fire_data import record, write_images_dir, write_json
from tests.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db

# Free dialogues: the teacher's scores with each student (FIRE: stop at >= 8, at a score that does not rise, or
# at n_max = 5). Hand-computed Table 4/5 below.
FREE_SCORES = {
    "c1": {"s-a": [3, 9], "s-b": [3, 5, 9]},
    "c2": {"s-a": [8], "s-b": [2, 4, 6, 7, 7]},
    "c3": {"s-a": [4, 3], "s-b": [4, 6, 8]},
}
SOURCES = {"c1": "chartqa", "c2": "chartqa", "c3": "seedbench"}


def d(text: str) -> Decimal:
    return Decimal(text)


@pytest.fixture
def fire_run_batch(tmp_path):
    records = [record("bars_01.png", f"Question {cid}?", "green", 2, source=SOURCES[cid], split="fire_test",
                      id=cid) for cid in ("c1", "c2", "c3")]
    report = import_fire(write_json(tmp_path / "fire.json", records), name="fire-runs",
                         images=write_images_dir(tmp_path / "images"), overlap=1)
    assert report.status == "imported", report.render()
    for name in ("s-a", "s-b", "t-1", "t-2"):
        ModelConfigFactory(name=name, backend="replay", backend_settings={"chunk_delay": 0})
    for conversation in Conversation.objects.all():
        recorded = {}
        for student, scores in FREE_SCORES[conversation.external_id].items():
            recorded[f"t-1@{student}"] = [f"Score: {s}\nFeedback: try again, step {i}." for i, s in enumerate(scores)]
        # Fixed dialogues: s-a repeats the recorded responses word for word; t-1 gives the recorded feedback with
        # scores 1 lower than recorded, t-2 an unparseable score on the first turn and the recorded one after.
        pairs = [(t.text) for t in conversation.turns.order_by("index") if t.role == "student"]
        teacher_turns = [t.text for t in conversation.turns.order_by("index") if t.role == "teacher"]
        recorded["s-a"] = pairs + ["Thought: more.\nAnswer: green"] * 5
        recorded["s-b"] = ["I do not know the answer here at all."] * 5
        recorded["t-1"] = [f"Score: {teacher_score(t) - 1:g}\nFeedback: {teacher_feedback(t)}" for t in teacher_turns]
        recorded["t-2"] = ["It looks fine to me."] + teacher_turns[1:]
        conversation.metadata = {**conversation.metadata, "recorded_answers": recorded}
        conversation.save(update_fields=["metadata"])
    return Batch.objects.get(name="fire-runs")


def test_teacher_turns_are_parsed_like_the_official_code():
    assert teacher_score("Score: 7.\nFeedback: look at the bars.") == 7.0
    assert teacher_score("score：10 — perfect") == 10.0
    assert teacher_score("I would give it a seven.") is None and teacher_score("Score: 12") is None
    assert teacher_feedback("Score: 3\nFeedback: Count again.") == "Count again."
    assert teacher_feedback("No markers here.") == "No markers here."


def test_free_dialogues_give_the_known_tables_4_and_5(fire_run_batch):
    run = services.fire_run_create(batch=fire_run_batch, protocol="fire_free", students="s-a,s-b", teachers="t-1",
                                   baseline="s-a", lanes=2, dispatch=False)
    run_all(run)
    run.refresh_from_db()
    assert run.status == BenchRun.Status.DONE, run.error
    scores = {(t.conversation.external_id, t.student.name): [] for t in FireRunTurn.objects.filter(role="teacher")}
    for turn in FireRunTurn.objects.filter(role="teacher").order_by("number"):
        scores[(turn.conversation.external_id, turn.student.name)].append(int(turn.score))
    assert scores == {(c, s): v for c, by in FREE_SCORES.items() for s, v in by.items()}  # each dialogue's stop

    table4, table5 = free_tables(run)
    # s-a: n_k 2 (c1), c2 removed (solved at turn 1), 10 (c3): AT 6 -> 1.00; ADR (6 - 1) / 2; ATR the same; RR 1/2.
    # s-b: n_k 3, 10, 3: AT 16/3 / 6 = 0.89; ADR (6 + 5 + 4) / 3 = 5; ATR (3 + 1.25 + 2) / 3 = 2.08; RR 2/3.
    assert table4.rows == [
        ["s-a", "t-1", 3, d("1.00"), d("2.50"), d("2.50"), d("0.50")],
        ["s-b", "t-1", 3, d("0.89"), d("5.00"), d("2.08"), d("0.67")],
    ]
    assert table5.rows == [
        ["chartqa", "s-a", "t-1", 2, d("1.00"), d("6.00"), d("6.00"), d("1.00")],
        ["seedbench", "s-a", "t-1", 1, d("1.00"), d("-1.00"), d("-1.00"), d("0.00")],
        ["chartqa", "s-b", "t-1", 2, d("3.25"), d("5.50"), d("2.13"), d("0.50")],
        ["seedbench", "s-b", "t-1", 1, d("0.30"), d("4.00"), d("2.00"), d("1.00")],
    ]


def test_fixed_dialogues_give_the_known_tables_2_and_3(fire_run_batch):
    run = services.fire_run_create(batch=fire_run_batch, protocol="fire_fixed", students="s-a,s-b",
                                   teachers="t-1,t-2", lanes=1, dispatch=False)
    run_all(run)
    students, teachers = student_table(run), teacher_table(run)
    by_student = {row[0]: row for row in students.rows}
    assert by_student["s-a"][1] == 6  # 3 conversations x 2 recorded student turns
    assert by_student["s-a"][2:6] == [d("1.00")] * 4  # word for word: BLEU-1..4 = 1
    # s-b: the same unhelpful sentence at every turn, scored against the recorded responses it stands for.
    references = [[t.reference_text] for t in FireRunTurn.objects.filter(run=run, student__name="s-b")
                  .order_by("conversation_id", "number")]
    expected = bleu_scores(["I do not know the answer here at all."] * 6, references)
    assert by_student["s-b"][2:6] == [round_half_up(expected[n], 2) for n in (1, 2, 3, 4)]
    assert by_student["s-b"][2] < d("0.5")
    by_teacher = {row[0]: row for row in teachers.rows}
    # t-1: every score 1 lower than recorded -> MAE 1, none unparseable; t-2: the first turn of each conversation
    # unparseable (an error of 10), the second right -> MAE (10 + 0) / 2 = 5, 3 unparseable.
    assert by_teacher["t-1"][1] == 6 and by_teacher["t-1"][7:] == [d("1.00"), 0]
    assert by_teacher["t-1"][2] == d("1.00")
    assert by_teacher["t-2"][7:] == [d("5.00"), 3]


def test_a_failed_call_keeps_what_was_made_and_resume_finishes_without_redoing(fire_run_batch):
    conversation = Conversation.objects.get(external_id="c3")
    recorded = conversation.metadata["recorded_answers"]
    kept = recorded.pop("t-1@s-b"), recorded.pop("t-1")  # nothing t-1 could replay to s-b on c3
    conversation.save(update_fields=["metadata"])
    run = services.fire_run_create(batch=fire_run_batch, protocol="fire_free", students="s-a,s-b", teachers="t-1",
                                   lanes=1, dispatch=False)
    run_all(run)
    run.refresh_from_db()
    assert run.status == BenchRun.Status.FAILED and "t-1 failed on conversation c3" in run.error
    before = FireRunTurn.objects.filter(run=run).count()
    assert before > 0
    recorded["t-1@s-b"], recorded["t-1"] = kept
    conversation.save(update_fields=["metadata"])
    services.bench_run_resume(run=run, dispatch=False)
    run_all(run)
    run.refresh_from_db()
    assert run.status == BenchRun.Status.DONE
    assert free_tables(run)[0].rows[1][3] == d("0.89")
    keys = FireRunTurn.objects.filter(run=run).values("conversation", "pair", "number", "role")
    assert keys.distinct().count() == FireRunTurn.objects.filter(run=run).count()


def test_bad_fire_requests_are_refused(fire_run_batch):
    for options, message in [
        ({"protocol": "fire_free", "students": "s-a", "teachers": ""}, "needs at least one student and one teacher"),
        ({"protocol": "fire_fixed", "students": "s-a", "teachers": "", "baseline": "t-1"}, "not one of the students"),
        ({"protocol": "fire_odd", "students": "s-a", "teachers": "t-1"}, "fire_fixed or fire_free"),
    ]:
        with pytest.raises(ApplicationError, match=message):
            services.fire_run_create(batch=fire_run_batch, dispatch=False, **options)
    assert not BenchRun.objects.exists()


def test_command_api_page_and_exports(fire_run_batch, capsys, api_client, client):
    from django.core.management import call_command

    from annotate.models import User
    from tests.factories import UserFactory

    call_command("run_fire", "--batch", "fire-runs", "--mode", "free", "--students", "s-a,s-b", "--teachers",
                 "t-1", "--baseline", "s-a", "--in-process", "--lanes", "1")
    out = capsys.readouterr().out
    assert "Done" in out and "--table fire-free" in out
    call_command("export_tables", "--batch", "fire-runs", "--table", "fire-free", "--format", "md")
    table = capsys.readouterr().out
    assert "| s-b | t-1 | 3 | 0.89 | 5.00 | 2.08 | 0.67 |" in table and "| seedbench | s-a | t-1 |" in table

    researcher = UserFactory(username="rita", role=User.Role.RESEARCHER)
    fire_run_batch.members.add(researcher)
    api_client.force_authenticate(researcher)
    response = api_client.post("/api/bench-runs/", {"protocol": "fire_fixed", "batch": "fire-runs",
                                                    "receivers": "s-a", "providers": "t-1", "lanes": 1},
                               format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["protocol"] == "fire_fixed" and body["table"].endswith("/tables/fire-fixed.json")
    run_all(BenchRun.objects.get(pk=body["id"]))
    client.force_login(researcher)
    page = client.get(f"/research/bench/{body['id']}/").content.decode()
    assert 'id="fire-table"' in page and "Table 3" in page and 'Table A1' in page
    assert api_client.get(body["table"]).status_code == 200
    bad = api_client.post("/api/bench-runs/", {"protocol": "fire_free", "batch": "fire-runs", "receivers": "s-a",
                                               "providers": ""}, format="json")
    assert bad.status_code == 400 and "one student and one teacher" in bad.json()["detail"]
