"""InterFeedback metrics over plain data (no ORM): accuracy, correction rates, bootstrap CIs, paper tables.

Input shapes
- An *outcome* is one InterFeedback-Human session: ``(model, category, corrected_round)`` with
  ``corrected_round`` in {0, 1, 2, 3} or ``None`` for never corrected.
- A *counts dict* maps ``(model, category)`` to `OutcomeCounts` (see `counts_from_outcomes`).
- A *bench record* (`BenchTaskRecord`) is one task of one receiver x provider pair of InterFeedback-Bench.

Rates are exact `Fraction`s (or None when the denominator is 0); only `percent` (evaluation.stats) turns them
into `Decimal`s for display, rounding half up, so 17/80 prints as 21.3 and 1/16 as 6.3.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from annotate.wording import phrase, phrase_in
from evaluation.stats import ConfidenceInterval, percent, percentile_interval
from evaluation.table import Cell, Table

ROUNDS: tuple[int, ...] = (0, 1, 2, 3)
FEEDBACK_ROUNDS: tuple[int, ...] = (1, 2, 3)
# Column names are English (the paper's, in every file) and translated where a page shows them (annotate.wording).
MODEL_COLUMN = phrase_in("report table column", "Model")
ROUND_COLUMN = phrase("# Round")  # Table 4's header in the paper
AVERAGE = phrase_in("report table column", "Average")

Outcome = tuple[str, str, int | None]
CountsKey = tuple[str, str]


# --- counting -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutcomeCounts:
    """Sessions of one group and how many were first corrected in round 0..3; the rest were never."""

    sessions: int = 0
    corrected: tuple[int, int, int, int] = (0, 0, 0, 0)

    def __post_init__(self) -> None:
        if len(self.corrected) != len(ROUNDS):
            raise ValueError(f"corrected needs one count per round {ROUNDS}, got {self.corrected}")
        if self.sessions < 0 or min(self.corrected) < 0:
            raise ValueError("counts cannot be negative")
        if sum(self.corrected) > self.sessions:
            raise ValueError(f"{sum(self.corrected)} corrected sessions out of only {self.sessions}")

    @property
    def never(self) -> int:
        return self.sessions - sum(self.corrected)

    @property
    def wrong_at_round_zero(self) -> int:
        return self.sessions - self.corrected[0]

    def __add__(self, other: OutcomeCounts) -> OutcomeCounts:
        if not isinstance(other, OutcomeCounts):
            return NotImplemented
        summed = tuple(a + b for a, b in zip(self.corrected, other.corrected, strict=True))
        return OutcomeCounts(self.sessions + other.sessions, summed)  # type: ignore[arg-type]

    def add_outcome(self, corrected_round: int | None) -> OutcomeCounts:
        if corrected_round is None:
            return OutcomeCounts(self.sessions + 1, self.corrected)
        if corrected_round not in ROUNDS:
            raise ValueError(f"corrected_round must be one of {ROUNDS} or None, got {corrected_round!r}")
        corrected = list(self.corrected)
        corrected[corrected_round] += 1
        return OutcomeCounts(self.sessions + 1, tuple(corrected))  # type: ignore[arg-type]


def counts_from_outcomes(outcomes: Iterable[Outcome]) -> dict[CountsKey, OutcomeCounts]:
    """Group `(model, category, corrected_round)` outcomes; keys keep first-seen order."""
    counts: dict[CountsKey, OutcomeCounts] = {}
    for model, category, corrected_round in outcomes:
        key = (model, category)
        counts[key] = counts.get(key, OutcomeCounts()).add_outcome(corrected_round)
    return counts


def pool(counts: Iterable[OutcomeCounts]) -> OutcomeCounts:
    """Sum counts: pooled (micro) over sessions, which is how the "Average" column is defined."""
    total = OutcomeCounts()
    for item in counts:
        total = total + item
    return total


def models_of(counts: Mapping[CountsKey, OutcomeCounts]) -> list[str]:
    return list(dict.fromkeys(model for model, _ in counts))


def categories_of(counts: Mapping[CountsKey, OutcomeCounts]) -> list[str]:
    return list(dict.fromkeys(category for _, category in counts))


def pooled_by_model(
    counts: Mapping[CountsKey, OutcomeCounts], categories: Sequence[str] | None = None
) -> dict[str, OutcomeCounts]:
    """Per model, pooled over the given categories (all categories when None)."""
    wanted = set(categories_of(counts) if categories is None else categories)
    return {
        model: pool(c for (m, category), c in counts.items() if m == model and category in wanted)
        for model in models_of(counts)
    }


# --- rates ----------------------------------------------------------------------------------------


def _ratio(numerator: int, denominator: int) -> Fraction | None:
    return Fraction(numerator, denominator) if denominator else None


def accuracy(counts: OutcomeCounts) -> Fraction | None:
    """Sessions right at round 0 / sessions."""
    return _ratio(counts.corrected[0], counts.sessions)


def accuracy_counts(counts: OutcomeCounts) -> tuple[int, int]:
    """The (k, n) behind `accuracy`: sessions right at round 0, sessions."""
    return counts.corrected[0], counts.sessions


def correction_counts(counts: OutcomeCounts, round_index: int) -> tuple[int, int]:
    """The (k, n) behind `correction_rate`: sessions first corrected in round k, sessions wrong at round 0."""
    return counts.corrected[round_index], counts.wrong_at_round_zero


def correction_rate(counts: OutcomeCounts, round_index: int) -> Fraction | None:
    """Sessions first corrected in round k (1..3) / sessions wrong at round 0."""
    if round_index not in FEEDBACK_ROUNDS:
        raise ValueError(f"correction rounds are {FEEDBACK_ROUNDS}, got {round_index!r}")
    return _ratio(counts.corrected[round_index], counts.wrong_at_round_zero)


# --- bootstrap ------------------------------------------------------------------------------------


def _resampled_outcomes(counts: OutcomeCounts, n_resamples: int, seed: int) -> np.ndarray:
    # Resampling sessions with replacement only changes how many land in each outcome, so one
    # multinomial draw per resample is the exact same bootstrap, without materialising sessions.
    cells = np.array([*counts.corrected, counts.never], dtype=float)
    rng = np.random.default_rng(seed)
    return rng.multinomial(counts.sessions, cells / counts.sessions, size=n_resamples)


def accuracy_ci(
    counts: OutcomeCounts, *, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95
) -> ConfidenceInterval | None:
    """Bootstrap CI of accuracy (as a share 0..1), resampling sessions; None without sessions."""
    if counts.sessions == 0:
        return None
    draws = _resampled_outcomes(counts, n_resamples, seed)
    return percentile_interval(draws[:, 0] / counts.sessions, confidence)


def correction_rate_ci(
    counts: OutcomeCounts,
    round_index: int,
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> ConfidenceInterval | None:
    """Bootstrap CI of the round-k correction rate; resamples with nobody wrong at round 0 are dropped."""
    if correction_rate(counts, round_index) is None:
        return None
    draws = _resampled_outcomes(counts, n_resamples, seed)
    wrong = counts.sessions - draws[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(wrong > 0, draws[:, round_index] / np.maximum(wrong, 1), np.nan)
    return percentile_interval(rates, confidence)


# --- paper tables ---------------------------------------------------------------------------------


def _layout(
    counts: Mapping[CountsKey, OutcomeCounts],
    models: Sequence[str] | None,
    categories: Sequence[str] | None,
) -> tuple[list[str], list[str]]:
    return (
        list(models) if models is not None else models_of(counts),
        list(categories) if categories is not None else categories_of(counts),
    )


def _category_cells(
    counts: Mapping[CountsKey, OutcomeCounts], model: str, categories: Sequence[str]
) -> tuple[list[OutcomeCounts | None], OutcomeCounts]:
    cells = [counts.get((model, category)) for category in categories]
    return cells, pool(c for c in cells if c is not None)


def _category_table(
    counts: Mapping[CountsKey, OutcomeCounts],
    *,
    models: Sequence[str] | None,
    categories: Sequence[str] | None,
    rates: Sequence[tuple[tuple[Cell, ...], tuple[Callable[[OutcomeCounts], Fraction | None],
                                                  Callable[[OutcomeCounts], tuple[int, int]]]]],
    title: str,
    leading: Sequence[str],
    notes: list[str],
    counts_note: str,
    digits: int,
    labels: Mapping[str, str] | None,
    group_column: str | None = None,
) -> Table:
    """The paper's layout shared by Tables 3 and 4: per model, one row per (label cells, (rate, its k and n)); one
    column per category, then the Average pooled over the model's sessions. '-' where a category has no session.
    Models are named by ``labels`` (display names) where given. Each cell's k and n go in the table's counts."""
    models, categories = _layout(counts, models, categories)
    names = labels or {}
    rows: list[list[Cell]] = []
    row_counts: list[list[tuple[int, int] | None]] = []
    for model in models:
        cells, pooled = _category_cells(counts, model, categories)
        for leading_cells, (rate, count) in rates:
            rows.append([
                names.get(model, model),
                *leading_cells,
                *(percent(rate(c), digits) if c is not None else None for c in cells),
                percent(rate(pooled), digits),
            ])
            # The sessions behind each cell, k of n (n = 0 where a category has none)
            row_counts.append([None] * (1 + len(leading_cells))
                              + [count(c if c is not None else OutcomeCounts()) for c in [*cells, pooled]])
    return Table(title=title, columns=[MODEL_COLUMN, *leading, *categories, AVERAGE], rows=rows, notes=notes,
                 group_column=group_column, counts=row_counts, counts_note=counts_note)


def accuracy_table(
    counts: Mapping[CountsKey, OutcomeCounts],
    *,
    models: Sequence[str] | None = None,
    categories: Sequence[str] | None = None,
    title: str = phrase("Accuracy (%) of models on InterFeedback-Human"),
    digits: int = 1,
    labels: Mapping[str, str] | None = None,
) -> Table:
    """Table 3 layout: one row per model, one column per category, then the pooled Average."""
    return _category_table(
        counts, models=models, categories=categories, rates=[((), (accuracy, accuracy_counts))], title=title,
        leading=[], digits=digits, labels=labels,
        counts_note=phrase("(k) and (n): the sessions behind each percentage, k right in round 0 of n sessions."),
        notes=[
            phrase("Accuracy = sessions answered correctly in round 0 / sessions."),
            phrase("Average is pooled over all sessions of the model, not the mean of the category columns."),
            phrase("'-' = no sessions."),
        ],
    )


def correction_rate_table(
    counts: Mapping[CountsKey, OutcomeCounts],
    *,
    models: Sequence[str] | None = None,
    categories: Sequence[str] | None = None,
    title: str = phrase("Correction rate (%) per feedback round on InterFeedback-Human"),
    digits: int = 1,
    labels: Mapping[str, str] | None = None,
) -> Table:
    """Table 4 layout: per model one row per feedback round 1..3 (the paper's "# Round" column); category columns,
    then pooled Average. Markdown and LaTeX name the model once per group of rounds."""
    rates = [((k,), (functools.partial(correction_rate, round_index=k),
                     functools.partial(correction_counts, round_index=k))) for k in FEEDBACK_ROUNDS]
    return _category_table(
        counts, models=models, categories=categories, rates=rates, title=title, leading=[ROUND_COLUMN], digits=digits,
        labels=labels, group_column=MODEL_COLUMN,
        counts_note=phrase("(k) and (n): the sessions behind each percentage, k first corrected in that round of n "
                           "sessions wrong in round 0."),
        notes=[
            phrase("Correction rate of round k = sessions first corrected in round k / sessions wrong in round 0."),
            phrase("Round 3 feedback includes the ground truth."),
            phrase("Average is pooled over all sessions of the model. '-' = no session wrong in round 0."),
        ],
    )


# --- InterFeedback-Bench --------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchTaskRecord:
    """One task of one receiver x provider run of InterFeedback-Bench.

    receiver_correct: the receiver's round-0 answer was right.
    provider_correct: the feedback provider's own answer to the task was right.
    corrected_with_detail / corrected_with_simple: the receiver was corrected (in any feedback round)
    with detailed LMM feedback / with simple 0-1 feedback. Only read for test tasks.
    """

    receiver: str
    provider: str
    task_id: str
    receiver_correct: bool
    provider_correct: bool
    corrected_with_detail: bool = False
    corrected_with_simple: bool = False


@dataclass(frozen=True)
class BenchSummary:
    tasks: int
    receiver_correct: int
    negatives: int  # receiver wrong
    test: int  # receiver wrong and provider right
    corrected_with_detail: int
    corrected_with_simple: int

    @property
    def accuracy(self) -> Fraction | None:
        return _ratio(self.receiver_correct, self.tasks)

    @property
    def detail_rate(self) -> Fraction | None:
        return _ratio(self.corrected_with_detail, self.test)

    @property
    def simple_rate(self) -> Fraction | None:
        return _ratio(self.corrected_with_simple, self.test)


def bench_summaries(records: Iterable[BenchTaskRecord]) -> dict[tuple[str, str], BenchSummary]:
    """Per (receiver, provider): Acc, #Neg, #Test = |receiver-wrong ∩ provider-right| and corrections."""
    tallies: dict[tuple[str, str], list[int]] = {}
    seen: set[tuple[str, str, str]] = set()
    for record in records:
        task_key = (record.receiver, record.provider, record.task_id)
        if task_key in seen:
            raise ValueError(
                f"task {record.task_id!r} appears twice for {record.receiver} x {record.provider}"
            )
        seen.add(task_key)
        tally = tallies.setdefault((record.receiver, record.provider), [0, 0, 0, 0, 0, 0])
        in_test = not record.receiver_correct and record.provider_correct
        tally[0] += 1
        tally[1] += record.receiver_correct
        tally[2] += not record.receiver_correct
        tally[3] += in_test
        tally[4] += in_test and record.corrected_with_detail
        tally[5] += in_test and record.corrected_with_simple
    return {pair: BenchSummary(*tally) for pair, tally in tallies.items()}


def bench_table(
    records: Iterable[BenchTaskRecord],
    *,
    title: str = phrase("InterFeedback-Bench: correction rate (%) with detailed and simple LMM feedback"),
    digits: int = 1,
) -> Table:
    rows: list[list[Cell]] = [
        [
            receiver,
            provider,
            percent(summary.accuracy, digits),
            summary.negatives,
            summary.test,
            percent(summary.detail_rate, digits),
            percent(summary.simple_rate, digits),
        ]
        for (receiver, provider), summary in bench_summaries(records).items()
    ]
    return Table(
        title=title,
        columns=[phrase("Receiver"), phrase("Provider"), phrase("Acc (%)"), phrase("#Neg"), phrase("#Test"),
                 phrase("Detail (%)"), phrase("Simple (%)")],
        rows=rows,
        notes=[
            phrase("#Neg = tasks the receiver got wrong; #Test = those the provider itself answered correctly."),
            phrase("Detail / Simple = share of #Test corrected with detailed / simple (0-1) feedback. "
                   "'-' = empty test set."),
        ],
    )
