"""InterFeedback-Bench Tables 1 and 2 (receivers as rows, a column group per provider) from a bench run's rows:
the shared round-0 answers and the run's detail and simple sessions."""

from __future__ import annotations

from fractions import Fraction
from typing import TypedDict

from annotate.bench.selectors import run_providers, run_receivers
from annotate.errors import NotFound
from annotate.models import Batch, BenchAnswer, BenchRun, Session, Task
from annotate.wording import phrase, phrase_in
from evaluation.interfeedback.metrics import MODEL_COLUMN, BenchTaskRecord, bench_summaries
from evaluation.stats import percent
from evaluation.table import Cell, Table, grouped_column

# InterFeedback's Table 1 column names (English in every file; pages translate them).
TEST, DETAIL, SIMPLE = phrase("# Test"), phrase("Detail (%)"), phrase("Simple (%)")
# The comparison tables' feedback sources and tests, as cells.
FEEDBACK_CELLS = {"Human": phrase_in("kind of feedback", "Human"), "LMM detail": phrase("LMM detail"),
                  "LMM simple": phrase("LMM simple")}
COMPARISON_CELLS = {"detail": phrase("Human vs LMM detail"), "simple": phrase("Human vs LMM simple")}


def latest_run(batch: Batch, protocol: str = BenchRun.Protocol.INTERFEEDBACK) -> BenchRun:
    """The batch's latest finished run of the protocol: its tables are what exports show. A run still going,
    cancelled or failed, and a replay of one person's feedback (its own page), are never taken for it."""
    runs = BenchRun.objects.filter(batch=batch, protocol=protocol, human_session__isnull=True)
    label = BenchRun.Protocol(protocol).label.split(":")[0]
    run = runs.filter(status=BenchRun.Status.DONE).first()
    if run is not None:
        return run
    if (newest := runs.first()) is not None:
        raise NotFound(f"Batch {batch.name!r} has no finished {label} run yet: the latest (#{newest.pk}) is "
                       f"{newest.get_status_display().lower()}. Tables come from a finished run.")
    raise NotFound(f"Batch {batch.name!r} has no {label} run yet: start one (run_bench / run_fire, "
                   "POST /api/bench-runs/).")


def bench_records(run: BenchRun) -> list[BenchTaskRecord]:
    """One record per (receiver, provider, task) whose round-0 answers both exist. A test task (receiver wrong,
    provider right) is corrected with a feedback kind when its session of that kind ended corrected."""
    from annotate.bench.engine import answers_key

    receivers, providers = run_receivers(run), run_providers(run)
    models = {m.pk: m for m in [*receivers, *providers]}
    keys = {pk: answers_key(m) for pk, m in models.items()}
    tasks = dict(Task.objects.filter(batch_id=run.batch_id).exclude(answer_type=Task.AnswerType.MANUAL)
                 .values_list("pk", "external_id"))
    verdicts = {(a.task_id, a.model_config_id): a.verdict for a in BenchAnswer.objects.filter(
        task_id__in=tasks, model_config_id__in=models).only("task_id", "model_config_id", "verdict", "answers_key")
        if a.answers_key == keys[a.model_config_id]}
    corrected = {
        (receiver, provider, kind, task): rnd is not None
        for receiver, provider, kind, task, rnd in Session.objects.filter(
            bench_run=run, status=Session.Status.COMPLETED).values_list(
            "model_config_id", "feedback_provider_id", "feedback_kind", "task_id", "corrected_round")
    }
    records = []
    for receiver in receivers:
        for provider in providers:
            for task_id, external_id in tasks.items():
                mine, theirs = verdicts.get((task_id, receiver.pk)), verdicts.get((task_id, provider.pk))
                if mine is None or theirs is None:
                    continue
                records.append(BenchTaskRecord(
                    receiver=receiver.label, provider=provider.label, task_id=external_id,
                    receiver_correct=mine, provider_correct=theirs,
                    corrected_with_detail=corrected.get((receiver.pk, provider.pk, "detail", task_id), False),
                    corrected_with_simple=corrected.get((receiver.pk, provider.pk, "simple", task_id), False),
                ))
    return records


def bench_paper_table(run: BenchRun, *, digits: int = 1) -> Table:
    """InterFeedback's Tables 1 and 2: a row per receiver (``Model``) with its Acc and # Neg, then # Test, Detail
    (%) and Simple (%) grouped under each provider's name; rows and groups in the order the run was given them
    (the paper's). A kind the run did not use prints '-'."""
    summaries = bench_summaries(bench_records(run))
    receivers = [m.label for m in run_receivers(run)]
    providers = [m.label for m in run_providers(run)]
    kinds = set(run.feedback_kinds)
    columns: list[str] = [MODEL_COLUMN, phrase("Acc (%)"), phrase("# Neg")]
    for provider in providers:
        columns += [grouped_column(provider, TEST), grouped_column(provider, DETAIL), grouped_column(provider, SIMPLE)]
    rows: list[list[Cell]] = []
    for receiver in receivers:
        first = next((summaries[(receiver, p)] for p in providers if (receiver, p) in summaries), None)
        row: list[Cell] = [receiver, percent(first.accuracy, digits) if first else None,
                           first.negatives if first else None]
        for provider in providers:
            summary = summaries.get((receiver, provider))
            row += [summary.test if summary else None,
                    percent(summary.detail_rate, digits) if summary and "detail" in kinds else None,
                    percent(summary.simple_rate, digits) if summary and "simple" in kinds else None]
        rows.append(row)
    return Table(
        title=phrase("InterFeedback-Bench on %(batch)s (run %(run)s): correction rate with LMM feedback",
                     batch=run.batch.name, run=run.pk),
        columns=columns, rows=rows, column_groups=[("", 3), *((provider, 3) for provider in providers)],
        notes=[phrase("Acc (%): the model's round-0 accuracy on the batch. # Neg: the number of negative samples "
                      "produced by the model (tasks it got wrong). # Test: the total number of test samples evaluated "
                      "(of # Neg, those the feedback provider answered correctly itself)."),
               phrase("Detail (%%): correction rate of using LMM-generated feedback. Simple (%%): correction rate of "
                      "using simple feedback (0 or 1). Both: the share of # Test corrected within %(rounds)s rounds, "
                      "rounded half up. '-' = not run or empty test set. Column names as InterFeedback's Table 1.",
                      rounds=run.max_rounds)],
    )


def human_replay_table(run: BenchRun, *, digits: int = 1) -> Table:
    """A run that replays one person's feedback (no provider models): per receiver, the tasks replayed (the
    receiver wrong at round 0 on the session's task) and how many it corrected by each round, cumulative."""
    sessions = Session.objects.filter(bench_run=run, feedback_kind=BenchRun.Feedback.HUMAN,
                                      status=Session.Status.COMPLETED)
    outcomes: dict[int, list[int | None]] = {}
    for receiver_id, corrected in sessions.values_list("model_config_id", "corrected_round"):
        outcomes.setdefault(receiver_id, []).append(corrected)
    replayed = run.max_rounds
    if run.human_session is not None:  # the person's rounds of feedback, as the engine replays them
        replayed = min(replayed, run.human_session.rounds.filter(index__gte=1).count())
    rounds = range(1, replayed + 1)
    columns: list[str] = [phrase("Receiver"), TEST]
    for k in rounds:
        columns += [phrase("Corrected by round %(k)s", k=k), phrase("By round %(k)s (%%)", k=k)]
    rows: list[list[Cell]] = []
    for receiver in run_receivers(run):
        mine = outcomes.get(receiver.pk, [])
        row: list[Cell] = [receiver.label, len(mine)]
        for k in rounds:
            corrected = sum(o is not None and o <= k for o in mine)
            row += [corrected, percent(Fraction(corrected, len(mine)), digits) if mine else None]
        rows.append(row)
    source = (phrase("session %(id)s", id=run.human_session_id) if run.human_session_id
              else phrase("a session since deleted"))
    return Table(
        title=phrase("Human feedback replayed on %(batch)s (run %(run)s, %(source)s)", batch=run.batch.name,
                     run=run.pk, source=source),
        columns=columns, rows=rows,
        notes=[phrase("# Test = tasks replayed: the session's task, when the receiver was wrong at round 0."),
               # xgettext:no-python-format ("% of" is not a placeholder: this phrase has no parameters)
               phrase("Corrected by round k = right in round k or before, with the person's feedback of rounds "
                      "1..k; % of # Test, rounded half up. '-' = nothing replayed.")],
    )


def run_table(run: BenchRun) -> Table:
    """The run's own result table: Tables 1/2, or the replay of a person's feedback."""
    if BenchRun.Feedback.HUMAN in run.feedback_kinds:
        return human_replay_table(run)
    return bench_paper_table(run)


# --- human vs LMM feedback on the same tasks ---------------------------------------------------------------------

def _human_outcomes(run: BenchRun) -> dict[tuple[int, int], int | None]:
    """(receiver id, task id) -> the round the human sessions corrected the model in (None: never), for tasks the
    model got wrong at round 0. Several annotators on one task: the median of their outcomes (never = after all)."""
    rounds_by_task: dict[tuple[int, int], list[float]] = {}
    receivers = run.receivers.values_list("pk", flat=True)
    for receiver, task, corrected in Session.objects.filter(
            batch_id=run.batch_id, bench_run__isnull=True, annotator__isnull=False, status=Session.Status.COMPLETED,
            model_config_id__in=receivers).exclude(corrected_round=0).values_list(
            "model_config_id", "task_id", "corrected_round"):
        rounds_by_task.setdefault((receiver, task), []).append(float("inf") if corrected is None else corrected)
    outcomes = {}
    for key, values in rounds_by_task.items():
        values.sort()
        middle = values[(len(values) - 1) // 2]  # the lower median: an even split counts as not corrected sooner
        outcomes[key] = None if middle == float("inf") else int(middle)
    return outcomes


CI_NOTE = phrase("95% CI: percentile bootstrap of the tasks (scipy.stats.bootstrap, 2,000 resamples); all corrected "
                 "or none gives [rate, rate].")


def _rate_ci(corrected: list[bool]) -> str:
    """Percentile bootstrap 95% CI of a correction rate (scipy.stats.bootstrap), as "[lo, hi]" in percent."""
    import numpy as np
    from scipy.stats import bootstrap

    if len(corrected) < 2 or len(set(corrected)) == 1:
        value = 100.0 * sum(corrected) / len(corrected) if corrected else None
        return "-" if value is None else f"[{value:.1f}, {value:.1f}]"
    result = bootstrap((np.array(corrected, dtype=float),), np.mean, confidence_level=0.95, n_resamples=2000,
                       method="percentile", random_state=np.random.default_rng(0))
    low, high = result.confidence_interval
    return f"[{100 * low:.1f}, {100 * high:.1f}]"


class McNemar(TypedDict):
    """The 2x2 counts of paired outcomes and the exact p-value (None: no pairs)."""

    n: int
    both: int
    human_only: int
    lmm_only: int
    neither: int
    p_value: float | None


def mcnemar_exact(human: list[bool], lmm: list[bool]) -> McNemar:
    """Paired outcomes on the same tasks: the 2x2 counts and statsmodels' exact McNemar p-value."""
    from statsmodels.stats.contingency_tables import mcnemar

    both = sum(h and m for h, m in zip(human, lmm, strict=True))
    human_only = sum(h and not m for h, m in zip(human, lmm, strict=True))
    lmm_only = sum(m and not h for h, m in zip(human, lmm, strict=True))
    neither = len(human) - both - human_only - lmm_only
    p_value = mcnemar([[both, human_only], [lmm_only, neither]], exact=True).pvalue if human else None
    return {"n": len(human), "both": both, "human_only": human_only, "lmm_only": lmm_only, "neither": neither,
            "p_value": p_value}


def comparison_tables(run: BenchRun, *, digits: int = 1) -> list[Table]:
    """Human, detail-LMM and simple feedback side by side on the tasks both saw, per (receiver, provider): the
    correction rate by round (cumulative) with a bootstrap 95% CI, by category, and the exact McNemar test."""
    human = _human_outcomes(run)
    lmm = {(receiver, provider, kind, task): corrected for receiver, provider, kind, task, corrected in
           Session.objects.filter(bench_run=run, status=Session.Status.COMPLETED).values_list(
               "model_config_id", "feedback_provider_id", "feedback_kind", "task_id", "corrected_round")}
    categories = dict(Task.objects.filter(batch_id=run.batch_id).values_list("pk", "category"))
    rounds = list(range(1, run.max_rounds + 1))
    by_round: list[list[Cell]] = []
    by_category: list[list[Cell]] = []
    tests: list[list[Cell]] = []
    for receiver in run_receivers(run):
        for provider in run_providers(run):
            kinds = [k for k in ("detail", "simple") if k in run.feedback_kinds]
            tasks = sorted(t for (r, t) in human if r == receiver.pk
                           and all((receiver.pk, provider.pk, k, t) in lmm for k in kinds))
            if not tasks:
                continue
            sources = {"Human": [human[(receiver.pk, t)] for t in tasks]}
            for kind in kinds:
                sources[f"LMM {kind}"] = [lmm[(receiver.pk, provider.pk, kind, t)] for t in tasks]
            for source, outcomes in sources.items():
                by_k = [[o is not None and o <= k for o in outcomes] for k in rounds]
                by_round.append([receiver.label, provider.label, FEEDBACK_CELLS[source], len(tasks),
                                 *(percent(Fraction(sum(c), len(c)), digits) for c in by_k),
                                 *(_rate_ci(c) for c in by_k)])
            for category in sorted({categories[t] for t in tasks}):
                members = [i for i, t in enumerate(tasks) if categories[t] == category]
                corrected = {source: [outcomes[i] is not None for i in members] for source, outcomes in sources.items()}
                names = ["Human", "LMM detail", "LMM simple"]
                by_category.append(
                    [receiver.label, provider.label, category, len(members),
                     *(percent(Fraction(sum(corrected[n]), len(members)), digits) if n in corrected else None
                       for n in names),
                     *(_rate_ci(corrected[n]) if n in corrected else None for n in names)])
            for kind in kinds:
                test = mcnemar_exact([o is not None for o in sources["Human"]],
                                     [o is not None for o in sources[f"LMM {kind}"]])
                p_value = test["p_value"]
                tests.append([receiver.label, provider.label, COMPARISON_CELLS[kind], test["n"], test["both"],
                              test["human_only"], test["lmm_only"], test["neither"],
                              None if p_value is None else round(float(p_value), 4)])
    note = phrase("Tasks both saw: the receiver was wrong at round 0 in the human sessions and in the bench, and the "
                  "provider was right. Human round 3 shows the ground truth to the model; LMM rounds never do.")
    receiver_provider: list[str] = [phrase("Receiver"), phrase("Provider")]
    return [
        Table(title=phrase("Correction rate (%%) by round, human vs LMM feedback (run %(run)s)", run=run.pk),
              columns=[*receiver_provider, phrase_in("kind of feedback", "Feedback"), phrase("Tasks")]
              + [phrase("By round %(k)s (%%)", k=k) for k in rounds]
              + [phrase("95%% CI, by round %(k)s", k=k) for k in rounds], rows=by_round,
              notes=[note, phrase("Cumulative: corrected in this round or before. %(ci)s", ci=CI_NOTE)]),
        Table(title=phrase("Correction rate (%%) by category, human vs LMM feedback (run %(run)s)", run=run.pk),
              columns=[*receiver_provider, phrase_in("report table column", "Category"), phrase("Tasks"),
                       phrase("Human (%)"), phrase("LMM detail (%)"), phrase("LMM simple (%)"), phrase("Human 95% CI"),
                       phrase("LMM detail 95% CI"), phrase("LMM simple 95% CI")],
              rows=by_category, notes=[note, phrase("Corrected within the run's rounds. %(ci)s", ci=CI_NOTE)]),
        Table(title=phrase("Exact McNemar test on the tasks both saw (run %(run)s)", run=run.pk),
              columns=[*receiver_provider, phrase("Comparison"), phrase("Pairs"), phrase("Both corrected"),
                       phrase("Human only"), phrase("LMM only"), phrase("Neither"), phrase("p (exact)")], rows=tests,
              notes=[note, phrase("statsmodels' mcnemar(exact=True): a binomial test on the discordant pairs.")]),
    ]
