"""Human and LMM feedback side by side on the tasks both saw: numbers checked by hand, McNemar from statsmodels."""

from __future__ import annotations

from decimal import Decimal

import pytest
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar

from annotate.models import Session, User
from evaluation.bench.tables import _rate_ci as rate_ci
from evaluation.bench.tables import comparison_tables, mcnemar_exact
from tests.annotate.bench.test_bench_engine import bench_batch, run_all, start  # noqa: F401  (the fixture)
from tests.factories import ModelConfigFactory, UserFactory

pytestmark = pytest.mark.django_db


def human_session(batch, task_id: str, corrected_round, username: str):
    annotator = User.objects.filter(username=username).first() or UserFactory(username=username)
    return Session.objects.create(batch=batch, task=batch.tasks.get(external_id=task_id),
                                  model_config=ModelConfigFactory._meta.model.objects.get(name="r-one"),
                                  annotator=annotator, status=Session.Status.COMPLETED,
                                  corrected_round=corrected_round)


def test_side_by_side_on_a_hand_checked_example(bench_batch, client):  # noqa: F811
    # Bench (r-one x p-one): test set t0, t1, t2; LMM detail corrected in rounds 1, 3, never; simple 1, never, never.
    run = start(bench_batch, lanes=1)
    run_all(run)
    # People: t0 never corrected; t1 in round 1; t2 by two annotators in rounds 2 and never (lower median: 2);
    # t3 right at once (not comparable); t4 is outside p-one's test set.
    human_session(bench_batch, "t0", None, "h1")
    human_session(bench_batch, "t1", 1, "h1")
    human_session(bench_batch, "t2", 2, "h1")
    human_session(bench_batch, "t2", None, "h2")
    human_session(bench_batch, "t3", 0, "h1")
    human_session(bench_batch, "t4", 1, "h1")

    by_round, by_category, tests = comparison_tables(run)
    rows = {(r[1], r[2]): r for r in by_round.rows}
    assert rows[("p-one", "Human")][3:7] == [3, Decimal("33.3"), Decimal("66.7"), Decimal("66.7")]
    assert rows[("p-one", "LMM detail")][3:7] == [3, Decimal("33.3"), Decimal("33.3"), Decimal("66.7")]
    assert rows[("p-one", "LMM simple")][3:7] == [3, Decimal("33.3"), Decimal("33.3"), Decimal("33.3")]
    # Bootstrap CIs by round: a rate of 0 or 100 % has nothing to resample ([r, r]); others are an interval.
    assert rows[("p-two", "LMM detail")][7:10] == ["[100.0, 100.0]"] * 3  # t0 and t4 both corrected in round 1
    assert all(ci.startswith("[") for ci in rows[("p-one", "Human")][7:10])
    # p-two's test set for r-one is t0, t4, t5: people saw t0 and t4.
    assert rows[("p-two", "Human")][3:7] == [2, Decimal("50.0"), Decimal("50.0"), Decimal("50.0")]
    assert by_category.rows[0][:7] == ["r-one", "p-one", "Visual Logic", 3, Decimal("66.7"), Decimal("66.7"),
                                       Decimal("33.3")]
    assert by_category.rows[0][7:] == [rate_ci([False, True, True]), rate_ci([True, True, False]),
                                       rate_ci([True, False, False])]
    assert by_category.rows[1][4:] == [Decimal("50.0"), Decimal("100.0"), Decimal("100.0"),
                                       rate_ci([False, True]), "[100.0, 100.0]", "[100.0, 100.0]"]  # p-two: t0, t4
    detail = next(r for r in tests.rows if r[1] == "p-one" and r[2] == "Human vs LMM detail")
    # Human [no, yes, yes] vs LMM [yes, yes, no]: both 1, human only 1, LMM only 1, neither 0; p = 1.
    assert detail[3:] == [3, 1, 1, 1, 0, 1.0]

    researcher = UserFactory(username="rita", role=User.Role.RESEARCHER)
    bench_batch.members.add(researcher)
    client.force_login(researcher)
    page = client.get(f"/research/bench/{run.pk}/compare/").content.decode()
    assert 'id="compare-mcnemar"' in page and "Human vs LMM detail" in page
    for fmt in ("csv", "md", "tex", "json"):
        assert client.get(f"/research/bench/{run.pk}/compare.{fmt}").status_code == 200


def test_bootstrap_interval_of_a_rate_on_hand_checked_cases():
    assert rate_ci([True] * 5) == "[100.0, 100.0]" and rate_ci([False] * 5) == "[0.0, 0.0]"
    assert rate_ci([]) == "-"
    # Two tasks, one corrected: a resample of two has mean 0, 0.5 or 1 with chance 1/4, 1/2, 1/4, so the 2.5th
    # and 97.5th percentiles of 2,000 resamples are 0 and 1.
    assert rate_ci([True, False]) == "[0.0, 100.0]"
    # 20 tasks, 10 corrected: about 50 +- 22 points (1.96 x sqrt(.25 / 20) = 0.219), on the 5-point steps a
    # resample of 20 can take.
    low, high = (float(x) for x in rate_ci([True, False] * 10).strip("[]").split(", "))
    assert 20 <= low <= 30 and 70 <= high <= 80 and low % 5 == high % 5 == 0


def test_mcnemar_p_value_is_the_library_exact_test():
    human = [True] * 6 + [False] * 4 + [True] * 0
    lmm = [True] * 2 + [False] * 4 + [False] * 4
    result = mcnemar_exact(human, lmm)
    assert (result["both"], result["human_only"], result["lmm_only"], result["neither"]) == (2, 4, 0, 4)
    assert result["p_value"] == mcnemar([[2, 4], [0, 4]], exact=True).pvalue
    assert result["p_value"] == pytest.approx(binomtest(0, 4, 0.5).pvalue) == pytest.approx(0.125)


def replay_of_two_rounds_on_t1(batch):
    """A person's session on t1 corrected in round 2 (two feedback texts), replayed to r-one and r-two."""
    from annotate.bench import services
    from annotate.models import Round

    session = human_session(batch, "t1", 2, "h1")
    Round.objects.bulk_create([Round(session=session, index=0, answer_text="Answer: B"),
                               Round(session=session, index=1, feedback_text="Look at the corners."),
                               Round(session=session, index=2, feedback_text="Count the red ones.")])
    run = services.bench_run_create(batch=batch, receivers="r-one,r-two", providers="",
                                    human_session_id=session.pk, dispatch=False, lanes=1)
    run_all(run)
    return session, run


def test_a_persons_feedback_replayed_to_another_receiver(bench_batch):  # noqa: F811
    from annotate.bench import services
    from annotate.models import BenchRun

    # A person corrected some model on t1 in round 2: their two feedback texts go to r-one (wrong at round 0 on t1,
    # right from round 3) and r-two (right at once on t1: nothing to replay).
    session, run = replay_of_two_rounds_on_t1(bench_batch)
    run.refresh_from_db()
    assert run.status == BenchRun.Status.DONE and run.feedback_kinds == ["human"]
    replayed = Session.objects.get(bench_run=run)
    assert replayed.model_config.name == "r-one" and replayed.task.external_id == "t1"
    assert list(replayed.rounds.order_by("index").values_list("feedback_text", flat=True)) == [
        "", "Look at the corners.", "Count the red ones."]
    assert replayed.corrected_round is None  # r-one is right only from round 3: the person's two rounds were not enough

    with pytest.raises(Exception, match="no feedback to replay"):
        services.bench_run_create(batch=bench_batch, receivers="r-one", providers="",
                                  human_session_id=human_session(bench_batch, "t3", 0, "h1").pk, dispatch=False)


def test_a_replay_of_a_persons_feedback_has_its_own_table(bench_batch, api_client, client):  # noqa: F811
    from evaluation.bench.tables import human_replay_table
    from tests.annotate.bench.test_bench_engine import answers

    # The person's two rounds of feedback on t1 go to r-one (wrong at round 0) and to r-two (right at once: not
    # replayed). After the person's feedback r-one is right from round 2 (its recorded "r-one:human" answers).
    task = bench_batch.tasks.get(external_id="t1")
    task.recorded_answers["r-one:human"] = answers(2)
    task.save(update_fields=["recorded_answers"])
    session, run = replay_of_two_rounds_on_t1(bench_batch)
    table = human_replay_table(run)
    assert table.columns == ["Receiver", "# Test", "Corrected by round 1", "By round 1 (%)",
                             "Corrected by round 2", "By round 2 (%)"]  # the person gave two rounds
    # r-one: 1 task replayed, not corrected in round 1 (0/1), corrected in round 2 (1/1); r-two: nothing replayed.
    assert table.rows == [["r-one", 1, 0, Decimal("0.0"), 1, Decimal("100.0")], ["r-two", 0, 0, None, 0, None]]

    researcher = UserFactory(username="rita", role=User.Role.RESEARCHER)
    bench_batch.members.add(researcher)
    client.force_login(researcher)
    page = client.get(f"/research/bench/{run.pk}/").content.decode()
    assert 'id="bench-table"' in page and "Corrected by round 2" in page and 'id="compare-link"' not in page
    assert "| r-one | 1 | 0 | 0.0 | 1 | 100.0 |" in client.get(f"/research/bench/{run.pk}/table.md").content.decode()
    api_client.force_authenticate(researcher)
    body = api_client.get(f"/api/bench-runs/{run.pk}/").json()
    assert body["table"] == f"/api/bench-runs/{run.pk}/table.json"
    rows = api_client.get(body["table"]).json()["rows"]
    assert rows[0] == {"Receiver": "r-one", "# Test": 1, "Corrected by round 1": 0, "By round 1 (%)": 0.0,
                       "Corrected by round 2": 1, "By round 2 (%)": 100.0}
    api_client.force_authenticate(UserFactory(username="otto", role=User.Role.RESEARCHER))
    assert api_client.get(body["table"]).status_code == 404
    assert client.get(f"/research/bench/{run.pk}/table.xls").status_code == 404
