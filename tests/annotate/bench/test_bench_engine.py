"""InterFeedback-Bench runs with replay models whose answers and feedback make every cell of a small Table 1
known; the test set, the two feedback kinds, the stop at the first right answer, restart, resume and cancel."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.management import call_command

from annotate.bench import engine, services
from annotate.bench.lanes import LaneLost
from annotate.models import BenchAnswer, BenchLane, BenchRun, Round, Session, User
from evaluation.bench.tables import bench_paper_table
from evaluation.exports.renderers.tables import render
from tests.factories import BatchFactory, ModelConfigFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db

RIGHT, WRONG = "Looking closely.\nAnswer: A", "I think so.\nAnswer: B"
FEEDBACK = ["Look again at the left half of the picture.", "Count the shapes once more.", "Check each part again."]


def answers(first_right: int | None) -> list[str]:
    """Replayed answers for rounds 0..3: wrong until round ``first_right`` (None: never right)."""
    return [RIGHT if first_right is not None and k >= first_right else WRONG for k in range(4)]


# Round at which each receiver is first right, per task (0 = right at once); providers right or not at round 0.
# t6-t15 fill the batch to 16 tasks (no provider is right on them) so that Acc is an exact x.x5.
RECEIVERS = {"r-one": [1, 3, None, 0, 1, 1] + [None] * 10,
             "r-two": [0, 0, None, None, 2, None] + [0, 0, 0] + [None] * 7}
PROVIDERS = {"p-one": [True, True, True, True, False, False] + [False] * 10,
             "p-two": [True, False, False, False, True, True] + [False] * 10}
# What a receiver answers after simple feedback where it differs from after detailed feedback
# (recorded_answers["<receiver>:simple"]), so that the Detail and Simple columns differ.
AFTER_SIMPLE = {"r-one": {1: None, 5: None}, "r-two": {3: 2, 5: 1}}
# Expected Table 1, by hand (percentages rounded half up; banker's rounding would give 6.2 and 31.2):
# r-one: right at once on t3 only: Acc 1/16 = 6.25 -> 6.3, # Neg 15.
#   vs p-one, test {t0, t1, t2}: detail corrects t0, t1 -> 2/3 = 66.7; simple t0 only (t1 never) -> 1/3 = 33.3.
#   vs p-two, test {t0, t4, t5}: detail corrects all -> 3/3 = 100.0; simple t0, t4 (t5 never) -> 2/3 = 66.7.
# r-two: right at once on t0, t1, t6, t7, t8: Acc 5/16 = 31.25 -> 31.3, # Neg 11.
#   vs p-one, test {t2, t3}: detail none -> 0/2 = 0.0; simple t3 (round 2) -> 1/2 = 50.0.
#   vs p-two, test {t4, t5}: detail t4 -> 1/2 = 50.0; simple t4 and t5 (round 1) -> 2/2 = 100.0.
EXPECTED = [
    ["r-one", Decimal("6.3"), 15, 3, Decimal("66.7"), Decimal("33.3"), 3, Decimal("100.0"), Decimal("66.7")],
    ["r-two", Decimal("31.3"), 11, 2, Decimal("0.0"), Decimal("50.0"), 2, Decimal("50.0"), Decimal("100.0")],
]


@pytest.fixture
def bench_batch():
    batch = BatchFactory(name="bench-known")
    for i in range(16):
        recorded = {name: answers(firsts[i]) for name, firsts in RECEIVERS.items()}
        for name, changed in AFTER_SIMPLE.items():
            if i in changed:
                recorded[f"{name}:simple"] = answers(changed[i])
        for name, right in PROVIDERS.items():
            recorded[name] = [RIGHT if right[i] else WRONG]
            recorded[f"{name}:feedback"] = FEEDBACK
        TaskFactory(batch=batch, external_id=f"t{i}", answer_type="choice", options=["red", "green", "blue"],
                    ground_truth="A", question="Which colour is the square?", recorded_answers=recorded)
    for name in [*RECEIVERS, *PROVIDERS]:
        ModelConfigFactory(name=name, backend="replay", backend_settings={"chunk_delay": 0})
    return batch


def start(batch, **options) -> BenchRun:
    return services.bench_run_create(batch=batch, receivers="r-one,r-two", providers="p-one,p-two",
                                     dispatch=False, **options)


def run_all(run: BenchRun) -> None:
    for lane in range(run.lanes):
        engine.lane_run(run_id=run.pk, lane=lane)


def test_known_answers_give_the_known_table(bench_batch):
    run = start(bench_batch, lanes=2)
    run_all(run)
    run.refresh_from_db()
    assert run.status == BenchRun.Status.DONE
    table = bench_paper_table(run)
    assert table.columns == ["Model", "Acc (%)", "# Neg",
                             "p-one: # Test", "p-one: Detail (%)", "p-one: Simple (%)",
                             "p-two: # Test", "p-two: Detail (%)", "p-two: Simple (%)"]
    assert table.rows == EXPECTED
    assert "| r-one | 6.3 | 15 | 3 | 66.7 | 33.3 | 3 | 100.0 | 66.7 |" in render(table, "md")


def test_round0_answers_are_made_once_and_sessions_only_for_the_test_set(bench_batch):
    run = start(bench_batch, lanes=3)
    run_all(run)
    # 16 tasks x 4 models, each answered once.
    assert BenchAnswer.objects.count() == 64
    # Test sets: 3 + 3 + 2 + 2 tasks, two feedback kinds each.
    assert Session.objects.filter(bench_run=run).count() == 20
    assert not Session.objects.filter(bench_run=run, annotator__isnull=False).exists()
    # A second run on the same batch reuses every round-0 answer.
    second = start(bench_batch, lanes=1, feedback="simple")
    run_all(second)
    assert BenchAnswer.objects.count() == 64
    assert bench_paper_table(second).rows[0][5] == Decimal("33.3")


def test_feedback_kinds_and_the_stop_at_the_first_right_answer(bench_batch):
    run = start(bench_batch, lanes=1)
    run_all(run)
    t1 = Session.objects.get(bench_run=run, task__external_id="t1", model_config__name="r-one",
                             feedback_provider__name="p-one", feedback_kind="detail")
    rounds = list(t1.rounds.order_by("index"))
    assert [r.index for r in rounds] == [0, 1, 2, 3] and t1.corrected_round == 3
    assert [r.feedback_text for r in rounds[1:]] == FEEDBACK
    assert {r.feedback_kind for r in rounds[1:]} == {Round.FeedbackKind.LMM_DETAIL}
    t0 = Session.objects.get(bench_run=run, task__external_id="t0", model_config__name="r-one",
                             feedback_provider__name="p-one", feedback_kind="simple")
    assert list(t0.rounds.order_by("index").values_list("index", "feedback_text")) == [
        (0, ""), (1, "Your answer is incorrect.")]  # stopped at the first right answer
    never = Session.objects.get(bench_run=run, task__external_id="t2", model_config__name="r-one",
                                feedback_provider__name="p-one", feedback_kind="detail")
    assert never.rounds.count() == 4 and never.corrected_round is None


def test_a_restart_adds_nothing_and_a_second_copy_of_a_lane_waits(bench_batch):
    run = start(bench_batch, lanes=2)
    assert engine.lane_claim(run_id=run.pk, lane=0, token="first-worker")
    assert engine.lane_run(run_id=run.pk, lane=0, token="second-worker") is False  # leased by a live worker
    assert engine.lane_run(run_id=run.pk, lane=0, token="first-worker") is True
    run_all(run)
    counts = (Session.objects.count(), Round.objects.count(), BenchAnswer.objects.count())
    services.bench_run_resume  # noqa: B018  (a done run refuses a resume: below)
    for lane in range(run.lanes):
        assert engine.lane_run(run_id=run.pk, lane=lane) is False
    assert (Session.objects.count(), Round.objects.count(), BenchAnswer.objects.count()) == counts
    assert bench_paper_table(run).rows == EXPECTED


def test_a_failed_model_call_stops_the_run_and_resume_goes_on_from_there(bench_batch):
    task = bench_batch.tasks.get(external_id="t1")
    task.recorded_answers["p-one:feedback"] = FEEDBACK[:1]  # no feedback recorded for round 2
    task.save(update_fields=["recorded_answers"])
    run = start(bench_batch, lanes=1)
    run_all(run)
    run.refresh_from_db()
    assert run.status == BenchRun.Status.FAILED
    assert "p-one failed giving feedback on task t1, round 2" in run.error
    made = Round.objects.filter(session__bench_run=run).count()
    assert made > 0

    task.recorded_answers["p-one:feedback"] = FEEDBACK
    task.save(update_fields=["recorded_answers"])
    services.bench_run_resume(run=run, dispatch=False)
    run_all(run)
    run.refresh_from_db()
    assert run.status == BenchRun.Status.DONE
    assert bench_paper_table(run).rows == EXPECTED
    # Nothing doubled: one round per (session, index).
    assert Round.objects.filter(session__bench_run=run).values("session", "index").distinct().count() == \
        Round.objects.filter(session__bench_run=run).count()


def test_cancel_stops_the_lanes(bench_batch):
    run = start(bench_batch, lanes=1)
    services.bench_run_cancel(run=run)
    assert engine.lane_run(run_id=run.pk, lane=0) is False
    assert not Session.objects.filter(bench_run=run).exists()


def made(run: BenchRun) -> tuple[int, int, int, int]:
    """Everything a run writes: round-0 answers, sessions, rounds, and the model calls its lanes counted."""
    return (BenchAnswer.objects.count(), Session.objects.filter(bench_run=run).count(),
            Round.objects.filter(session__bench_run=run).count(),
            sum(BenchLane.objects.filter(run=run).values_list("calls", flat=True)))


def test_a_cancel_in_the_middle_keeps_what_was_made_and_makes_nothing_more(bench_batch):
    run = start(bench_batch, lanes=2)
    # Lane 0 works three slices that end at their first step (round-0 answers, the sessions, feedback round 1),
    # as a long lane does between its continuations; lane 1 has not started.
    for _ in range(3):
        assert engine.lane_run(run_id=run.pk, lane=0, seconds=1e-9) == engine.PAUSED
    lane0 = Session.objects.filter(bench_run=run)
    assert lane0.exists() and Round.objects.filter(session__in=lane0, index=1).exists()
    assert not Round.objects.filter(session__in=lane0, index=2).exists()
    before = made(run)

    services.bench_run_cancel(run=run)
    # Queued continuations and lanes not started yet stop before any call.
    assert engine.lane_run(run_id=run.pk, lane=0) is False and engine.lane_run(run_id=run.pk, lane=1) is False
    # A worker that was inside a lane when the cancel came stops at its next step, writing nothing of it.
    assert engine.lane_claim(run_id=run.pk, lane=1, token="busy-worker")
    with pytest.raises(LaneLost, match="cancelled"):
        engine.Lane(run, 1, "busy-worker").work()
    assert made(run) == before
    run.refresh_from_db()
    assert run.status == BenchRun.Status.CANCELLED

    # What was made is kept and counted once: resumed, the run ends with the known table.
    services.bench_run_resume(run=run, dispatch=False)
    assert engine.lane_run(run_id=run.pk, lane=0) is True
    assert engine.lane_run(run_id=run.pk, lane=1, token="busy-worker") is True  # its lease is still held
    assert bench_paper_table(run).rows == EXPECTED
    assert BenchAnswer.objects.count() == 64


def test_detail_feedback_that_states_the_answer_is_asked_once_more(bench_batch, client):
    t0, t1 = bench_batch.tasks.get(external_id="t0"), bench_batch.tasks.get(external_id="t1")
    # p-one states the answer in round 1 on both; asked once more, it does not on t1 and does again on t0 (no
    # ":again" recording: the replay gives the same text, as a deterministic model would).
    clean = "Think about which colour covers most of the square."
    t0.recorded_answers["p-one:feedback"] = ["The answer is A.", *FEEDBACK[1:]]
    t1.recorded_answers["p-one:feedback"] = ["The answer is A.", *FEEDBACK[1:]]
    t1.recorded_answers["p-one:feedback:again"] = [clean]
    for task in (t0, t1):
        task.save(update_fields=["recorded_answers"])
    run = start(bench_batch, lanes=1, feedback="detail")
    run_all(run)

    def round1(task):
        return Round.objects.get(session__bench_run=run, session__task=task, session__feedback_provider__name="p-one",
                                 session__model_config__name="r-one", index=1)

    kept = round1(t1)
    assert kept.feedback_text == kept.feedback_to_model == clean and not kept.leak_flagged
    still = round1(t0)
    assert still.feedback_text == "The answer is A." and still.leak_flagged and still.stated_answer_correct is True
    assert list(Round.objects.filter(session__bench_run=run, leak_flagged=True)) == [still]
    # Counted and listed per provider on the run's page: what remains after asking once more.
    researcher = UserFactory(username="rita", role=User.Role.RESEARCHER)
    bench_batch.members.add(researcher)
    client.force_login(researcher)
    page = client.get(f"/research/bench/{run.pk}/").content.decode()
    assert "p-one: 1 round" in page and "<td>t0</td>" in page and "<td>t1</td>" not in page

    # Without regeneration the first text is kept and flagged.
    second = start(bench_batch, lanes=1, feedback="detail", regenerate_leaks=False)
    run_all(second)
    assert Round.objects.filter(session__bench_run=second, leak_flagged=True).count() == 2


def test_detail_feedback_that_states_the_answer_is_flagged(bench_batch):
    task = bench_batch.tasks.get(external_id="t1")
    task.recorded_answers["p-one:feedback"] = ["The answer is A.", *FEEDBACK[1:]]
    task.save(update_fields=["recorded_answers"])
    run = start(bench_batch, lanes=1, feedback="detail")
    run_all(run)
    flagged = Round.objects.get(session__bench_run=run, session__task=task, session__feedback_provider__name="p-one",
                                session__model_config__name="r-one", index=1)
    assert flagged.leak_flagged and flagged.stated_answer_correct is True


def test_bad_requests_are_refused_before_anything_is_written(bench_batch):
    from annotate.errors import ApplicationError

    for options, message in [
        ({"receivers": "ghost", "providers": "p-one"}, "No active model named 'ghost'"),
        ({"receivers": "r-one", "providers": "p-one", "feedback": "loud"}, "detail and/or simple"),
        ({"receivers": "r-one", "providers": "p-one", "rounds": 0}, "Rounds must be 1 to 10"),
    ]:
        with pytest.raises(ApplicationError, match=message):
            services.bench_run_create(batch=bench_batch, dispatch=False, **options)
    assert not BenchRun.objects.exists()


def test_the_command_runs_in_process_and_prints_where_the_tables_are(bench_batch, capsys):
    call_command("run_bench", "--batch", "bench-known", "--receivers", "r-one,r-two", "--providers",
                 "p-one,p-two", "--in-process", "--lanes", "2")
    out = capsys.readouterr().out
    assert "Done" in out and "20 of 20 feedback sessions finished" in out and "--table bench" in out
    call_command("export_tables", "--batch", "bench-known", "--table", "bench", "--format", "md")
    assert "| r-two | 31.3 | 11 | 2 | 0.0 | 50.0 | 2 | 50.0 | 100.0 |" in capsys.readouterr().out


def test_bench_sessions_are_not_counted_in_the_human_tables(bench_batch):
    from evaluation.interfeedback.services import outcome_recompute
    from evaluation.models import CountedSession

    run = start(bench_batch, lanes=1)
    run_all(run)
    outcome_recompute(batch_id=bench_batch.pk)
    assert not CountedSession.objects.filter(batch=bench_batch).exists()
