"""FIRE fixed and free dialogues run by the app with replay models built so that every cell of small Tables 2-5
is known; the parsing of teacher turns; resume without redoing a turn."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotate.bench import services
from annotate.bench.fire_parsing import fixed_dialogue_reading
from annotate.errors import ApplicationError
from annotate.imports.batches import import_fire
from annotate.models import Batch, BenchRun, Conversation, FireRunTurn
from evaluation.fire.runs import free_tables, student_table, teacher_table
from tests.annotate.bench.test_bench_engine import run_all
from tests.annotate.rating.fire.fire_data import record, write_images_dir, write_json
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
# Every recorded conversation (fire_data.record, 2 rounds) is the same: student turns "Thought: attempt 1.\nAnswer: x"
# and "Thought: attempt 2.\nAnswer: green", teacher turns "Score: 3.\nFeedback: hint number 1." and
# "Score: 10.\nFeedback: hint number 2.". The misses below share with them only n-grams found in *every* reference
# ("Thought:", "attempt", "Answer:", "Thought: attempt"; "hint", "number", "hint number"), which BLEU counts but
# CIDEr-D weighs 0 (idf log(N / N)), so their CIDEr-D is exactly 0.
STUDENT_MISS = "Thought: attempt again.\nAnswer: unknown"
TEACHER_MISS = "hint number one, look again."


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
        # Fixed dialogues (hand-computed Tables 2 and 3 in test_fixed_dialogues_give_the_known_tables_2_and_3):
        # s-a repeats the recorded responses word for word; s-b answers turn 1 with STUDENT_MISS, turn 2 word for
        # word; t-1 gives the recorded feedback with scores 1 lower than recorded; t-2 answers turn 1 with
        # TEACHER_MISS (no score, so unparseable) and gives the recorded turn 2.
        pairs = [(t.text) for t in conversation.turns.order_by("index") if t.role == "student"]
        teacher_turns = [t.text for t in conversation.turns.order_by("index") if t.role == "teacher"]
        recorded["s-a"] = pairs + ["Thought: more.\nAnswer: green"] * 5
        recorded["s-b"] = [STUDENT_MISS, pairs[1]] + ["I do not know the answer here at all."] * 3
        readings = [fixed_dialogue_reading(t) for t in teacher_turns]
        recorded["t-1"] = [f"Score: {r.score - 1:g}\nFeedback: {r.feedback}" for r in readings]
        recorded["t-2"] = [TEACHER_MISS] + teacher_turns[1:]
        conversation.metadata = {**conversation.metadata, "recorded_answers": recorded}
        conversation.save(update_fields=["metadata"])
    return Batch.objects.get(name="fire-runs")


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


def test_fixed_dialogues_give_the_known_tables_2_and_3(fire_run_batch, capsys):
    from django.core.management import call_command

    run = services.fire_run_create(batch=fire_run_batch, protocol="fire_fixed", students="s-a,s-b",
                                   teachers="t-1,t-2", lanes=1, dispatch=False)
    run_all(run)
    # pycocoevalcap, per item: BLEU-n = (p_1 ... p_n)^(1/n) (p_k: clipped k-gram matches / k-grams of the
    # hypothesis; 0 matches give (0 + 1e-15) / (k-grams + 1e-9), i.e. ~0), times exp(1 - ref/hyp) only when the
    # hypothesis is shorter (never here); a table cell is the mean over items. CIDEr-D of an item identical to its
    # one reference: 10 x the mean over n = 1..4 of cos(tf-idf vectors) = 1 for every n that has an n-gram with
    # idf > 0 (delta = 0: no length penalty); an item sharing only idf-0 n-grams scores 0.
    # Table 2 (6 turns: 3 conversations x 2 recorded student turns; the references have 5 tokens).
    # s-a, word for word: BLEU-1..4 = 1; CIDEr-D = 10 ("1."/"x"/"2."/"green" and the n-grams holding them are in
    #   3 of the 6 references: idf log 2 > 0 for n = 1..4).
    # s-b, turn 1 "Thought: attempt again. Answer: unknown" against "Thought: attempt 1. Answer: x":
    #   unigrams 3/5, bigrams 1/4 ("Thought: attempt"), trigrams 0/3, 4-grams 0/2 -> 0.6, sqrt(0.6 x 0.25) =
    #   0.3873, ~0, ~0; CIDEr-D 0. Turn 2 word for word: 1, 1, 1, 1; CIDEr-D 10. Means: BLEU-1 (0.6 + 1) / 2 = 0.80,
    #   BLEU-2 (0.3873 + 1) / 2 = 0.6937 -> 0.69, BLEU-3 (0 + 1) / 2 = 0.50, BLEU-4 0.50; CIDEr (0 + 10) / 2 = 5.00.
    assert student_table(run).rows == [
        ["s-a", 6, d("1.00"), d("1.00"), d("1.00"), d("1.00"), d("10.00")],
        ["s-b", 6, d("0.80"), d("0.69"), d("0.50"), d("0.50"), d("5.00")],
    ]
    # Table 3 (6 teacher turns each; feedback compared after "Feedback:": "hint number 1." / "hint number 2.").
    # t-1, feedback word for word, 3 tokens: BLEU-1..3 = 1; no 4-gram on either side, so p_4 = 1e-15 / 1e-9 and
    #   BLEU-4 = (1e-6)^(1/4) = 0.0316 -> 0.03; CIDEr-D = 10 x (1 + 1 + 1 + 0) / 4 = 7.50 (no 4-gram vector).
    #   Scores 2 and 9 against 3 and 10: MAE |2 - 3| = |9 - 10| = 1.00, none unparseable.
    # t-2, turn 1 "hint number one, look again." (no "Score:"): unparseable, so its feedback is "" as in FIRE's
    #   eval_feedback_teacher: BLEU 0, CIDEr-D 0. Turn 2 word for word, as t-1: 1, 1, 1, 0.0316; CIDEr-D 7.5.
    #   Means: BLEU-1..3 (0 + 1) / 2 = 0.50, BLEU-4 0.0316 / 2 = 0.0158 -> 0.02; CIDEr 7.5 / 2 = 3.75.
    #   MAE: turn 1 unparseable (an error of 10), turn 2 exact -> (10 + 0) / 2 = 5.00; 3 unparseable.
    assert teacher_table(run).rows == [
        ["t-1", 6, d("1.00"), d("1.00"), d("1.00"), d("0.03"), d("7.50"), d("1.00"), 0],
        ["t-2", 6, d("0.50"), d("0.50"), d("0.50"), d("0.02"), d("3.75"), d("5.00"), 3],
    ]

    call_command("export_tables", "--batch", "fire-runs", "--table", "fire-fixed", "--format", "md")
    markdown = capsys.readouterr().out
    assert "| s-b | 6 | 0.80 | 0.69 | 0.50 | 0.50 | 5.00 |" in markdown
    assert "| t-2 | 6 | 0.50 | 0.50 | 0.50 | 0.02 | 3.75 | 5.00 | 3 |" in markdown
    call_command("export_tables", "--batch", "fire-runs", "--table", "fire-fixed", "--format", "csv")
    lines = capsys.readouterr().out.splitlines()
    assert "s-a,6,1.00,1.00,1.00,1.00,10.00" in lines and "t-1,6,1.00,1.00,1.00,0.03,7.50,1.00,0" in lines


def test_ignored_ids_leave_conversations_out_of_the_tables(fire_run_batch, capsys, api_client):
    from django.core.management import call_command

    from annotate.models import User
    from tests.factories import UserFactory

    c3 = Conversation.objects.get(external_id="c3")
    c3.metadata["recorded_answers"]["t-1"] = [f"Score: 0\nFeedback: hint number {n}." for n in (1, 2)]
    c3.save(update_fields=["metadata"])
    plain = services.fire_run_create(batch=fire_run_batch, protocol="fire_fixed", students="", teachers="t-1",
                                     lanes=1, dispatch=False)
    run_all(plain)
    # t-1 on c3 scores 0 and 0 against 3 and 10: MAE (4 x 1 + 3 + 10) / 6 = 17/6 = 2.83 with c3 ...
    assert teacher_table(plain).rows[0][1] == 6 and teacher_table(plain).rows[0][7] == d("2.83")

    call_command("run_fire", "--batch", "fire-runs", "--mode", "fixed", "--teachers", "t-1", "--ignore-ids",
                 "c3, x9", "--in-process", "--lanes", "1")
    capsys.readouterr()
    run = BenchRun.objects.latest("pk")
    assert run.ignored_ids == ["c3", "x9"]
    table = teacher_table(run)
    # ... and 1.00 over the 4 turns of c1 and c2 without it (the other cells as in Table 3 above).
    assert table.rows == [["t-1", 4, d("1.00"), d("1.00"), d("1.00"), d("0.03"), d("7.50"), d("1.00"), 0]]
    assert "Left out: 1 conversation(s) of the 2 id(s) the run ignores." in table.notes

    free = services.fire_run_create(batch=fire_run_batch, protocol="fire_free", students="s-a,s-b", teachers="t-1",
                                    baseline="s-a", ignored_ids=["c1"], lanes=1, dispatch=False)
    run_all(free)
    # Without c1 (FREE_SCORES): s-a keeps c2 (removed: solved at turn 1) and c3 [4, 3] (n_k 10; ADR = ATR = -1,
    # RR 0). s-b: c2 [2, 4, 6, 7, 7] (n_k 10, gain 5 over 4 turns) and c3 [4, 6, 8] (n_k 3, gain 4 over 2): AT
    # (10 + 3) / 2 / 10 = 0.65, ADR (5 + 4) / 2 = 4.50, ATR (1.25 + 2) / 2 = 1.625 -> 1.63, RR (0 + 1) / 2 = 0.50.
    assert free_tables(free)[0].rows == [
        ["s-a", "t-1", 2, d("1.00"), d("-1.00"), d("-1.00"), d("0.00")],
        ["s-b", "t-1", 2, d("0.65"), d("4.50"), d("1.63"), d("0.50")],
    ]

    researcher = UserFactory(username="rita", role=User.Role.RESEARCHER)
    fire_run_batch.members.add(researcher)
    api_client.force_authenticate(researcher)
    response = api_client.post("/api/bench-runs/", {"protocol": "fire_fixed", "batch": "fire-runs",
                                                    "providers": "t-1", "ignored_ids": ["c3"], "lanes": 1},
                               format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["ignored_ids"] == ["c3"]
    assert BenchRun.objects.get(pk=response.json()["id"]).ignored_ids == ["c3"]
    bad = api_client.post("/api/bench-runs/", {"protocol": "fire_fixed", "batch": "fire-runs", "providers": "t-1",
                                               "ignored_ids": "c3"}, format="json")
    assert bad.status_code == 400


def test_the_run_keeps_each_models_generation_settings_for_prompts_json(fire_run_batch, client):
    from annotate.models import ModelConfig, User
    from tests.factories import UserFactory

    ModelConfig.objects.filter(name="s-a").update(generation={"temperature": 0.7, "max_new_tokens": 64})
    ModelConfig.objects.filter(name="t-1").update(generation={"seed": 3, "stop": ["\n\n"]})
    run = services.fire_run_create(batch=fire_run_batch, protocol="fire_free", students="s-a", teachers="t-1",
                                   lanes=1, dispatch=False)
    ModelConfig.objects.filter(name="s-a").update(generation={"temperature": 1.0})  # edited after the start

    researcher = UserFactory(username="rita", role=User.Role.RESEARCHER)
    fire_run_batch.members.add(researcher)
    client.force_login(researcher)
    prompts = client.get(f"/research/bench/{run.pk}/prompts.json").json()["prompts"]
    # As the run started, the defaults filled in (models_runtime.GenerationSettings).
    assert prompts["generation"] == {
        "students": {"s-a": {"max_new_tokens": 64, "temperature": 0.7, "top_p": 1.0, "seed": None, "stop": []}},
        "teachers": {"t-1": {"max_new_tokens": 256, "temperature": 0.0, "top_p": 1.0, "seed": 3, "stop": ["\n\n"]}},
    }
    assert prompts["fire"]["teacher"].startswith("You are a teacher.")

    ModelConfig.objects.filter(name="t-1").update(generation={"temprature": 0.5})
    with pytest.raises(ApplicationError, match="'t-1': unknown generation setting"):
        services.fire_run_create(batch=fire_run_batch, protocol="fire_free", students="s-a", teachers="t-1",
                                 dispatch=False)


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
    assert body["protocol"] == "fire_fixed" and body["table"] == f"/api/bench-runs/{body['id']}/table.json"
    run_all(BenchRun.objects.get(pk=body["id"]))
    client.force_login(researcher)
    page = client.get(f"/research/bench/{body['id']}/").content.decode()
    assert 'id="fire-table"' in page and "Table 3" in page and 'Table A1' in page
    assert api_client.get(body["table"]).status_code == 200
    bad = api_client.post("/api/bench-runs/", {"protocol": "fire_free", "batch": "fire-runs", "receivers": "s-a",
                                               "providers": ""}, format="json")
    assert bad.status_code == 400 and "one student and one teacher" in bad.json()["detail"]


def test_a_lane_whose_time_slice_ends_mid_chunk_keeps_the_chunk_and_finishes(fire_run_batch):
    # A slice that is over at once: each continuation must still save what its chunk made before pausing (a pause
    # raised inside the chunk's transaction would roll it back, and the lane would redo it for ever).
    from annotate.bench import engine

    run = services.fire_run_create(batch=fire_run_batch, protocol="fire_free", students="s-a,s-b", teachers="t-1",
                                   baseline="s-a", lanes=1, dispatch=False)
    outcomes = [engine.lane_run(run_id=run.pk, lane=0, seconds=1e-9)]
    assert outcomes[0] == engine.PAUSED and FireRunTurn.objects.filter(run=run).exists()
    while outcomes[-1] == engine.PAUSED and len(outcomes) < 40:
        outcomes.append(engine.lane_run(run_id=run.pk, lane=0, seconds=1e-9))
    assert outcomes[-1] is True and len(outcomes) <= 1 + len(fire_run_batch.conversations.all())
    run.refresh_from_db()
    assert run.status == BenchRun.Status.DONE
    assert free_tables(run)[0].rows == [
        ["s-a", "t-1", 3, d("1.00"), d("2.50"), d("2.50"), d("0.50")],
        ["s-b", "t-1", 3, d("0.89"), d("5.00"), d("2.08"), d("0.67")],
    ]
