"""InterFeedback-Bench runs with replay models whose answers and feedback make every cell of a small Table 1
known; the test set, the two feedback kinds, the stop at the first right answer, restart, resume and cancel."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.management import call_command

from annotate.bench import engine, services
from annotate.models import BenchAnswer, BenchRun, Round, Session
from evaluation.bench import bench_paper_table
from evaluation.exporters.tables import render
from tests.factories import BatchFactory, ModelConfigFactory, TaskFactory

pytestmark = pytest.mark.django_db

RIGHT, WRONG = "Looking closely.\nAnswer: A", "I think so.\nAnswer: B"
FEEDBACK = ["Look again at the left half of the picture.", "Count the shapes once more.", "Check each part again."]


def answers(first_right: int | None) -> list[str]:
    """Replayed answers for rounds 0..3: wrong until round ``first_right`` (None: never right)."""
    return [RIGHT if first_right is not None and k >= first_right else WRONG for k in range(4)]


# Round at which each receiver is first right, per task (0 = right at once); providers right or not at round 0.
RECEIVERS = {"r-one": [1, 3, None, 0, 1, 1], "r-two": [0, 0, None, None, 2, None]}
PROVIDERS = {"p-one": [True, True, True, True, False, False], "p-two": [True, False, False, False, True, True]}
# Expected Table 1: r-one Acc 1/6, Neg 5; vs p-one test {t0,t1,t2}: t0, t1 corrected -> 66.7; vs p-two test
# {t0,t4,t5}: all corrected -> 100.0. r-two Acc 2/6, Neg 4; vs p-one test {t2,t3}: none -> 0.0; vs p-two test
# {t4,t5}: t4 corrected -> 50.0.
EXPECTED = [
    ["r-one", Decimal("16.7"), 5, 3, Decimal("66.7"), Decimal("66.7"), 3, Decimal("100.0"), Decimal("100.0")],
    ["r-two", Decimal("33.3"), 4, 2, Decimal("0.0"), Decimal("0.0"), 2, Decimal("50.0"), Decimal("50.0")],
]


@pytest.fixture
def bench_batch():
    batch = BatchFactory(name="bench-known")
    for i in range(6):
        recorded = {name: answers(firsts[i]) for name, firsts in RECEIVERS.items()}
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
    assert table.columns == ["Receiver", "Acc (%)", "# Neg",
                             "p-one: # Test", "p-one: Detail (%)", "p-one: Simple (%)",
                             "p-two: # Test", "p-two: Detail (%)", "p-two: Simple (%)"]
    assert table.rows == EXPECTED
    assert "| r-one | 16.7 | 5 | 3 | 66.7 | 66.7 | 3 | 100.0 | 100.0 |" in render(table, "md")


def test_round0_answers_are_made_once_and_sessions_only_for_the_test_set(bench_batch):
    run = start(bench_batch, lanes=3)
    run_all(run)
    # 6 tasks x 4 models, each answered once.
    assert BenchAnswer.objects.count() == 24
    # Test sets: 3 + 3 + 2 + 2 tasks, two feedback kinds each.
    assert Session.objects.filter(bench_run=run).count() == 20
    assert not Session.objects.filter(bench_run=run, annotator__isnull=False).exists()
    # A second run on the same batch reuses every round-0 answer.
    second = start(bench_batch, lanes=1, feedback="simple")
    run_all(second)
    assert BenchAnswer.objects.count() == 24
    assert bench_paper_table(second).rows[0][5] == Decimal("66.7")


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
    assert "| r-two | 33.3 | 4 | 2 | 0.0 | 0.0 | 2 | 50.0 | 50.0 |" in capsys.readouterr().out


def test_bench_sessions_are_not_counted_in_the_human_tables(bench_batch):
    from evaluation.models import CountedSession
    from evaluation.services import outcome_recompute

    run = start(bench_batch, lanes=1)
    run_all(run)
    outcome_recompute(batch_id=bench_batch.pk)
    assert not CountedSession.objects.filter(batch=bench_batch).exists()
