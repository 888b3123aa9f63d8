"""Pairwise preference metrics over plain data (no ORM), for batches of kind ``preference``.

Input shape: one ``RankedJudgment`` per (item, rater): the label of each candidate in the order shown
(candidate 1 first; a label is a model name, or "Candidate k" when the data names no models) and the rater's
ranking as groups of candidate numbers, best group first, a group being a tie (``1>2=3`` → ``((1,), (2, 3))``).

- ``pair_judgments``: every ranking becomes one judgment per pair of candidates with different labels,
  oriented (model A, model B) by a given label order: +1 A preferred, 0 tie, -1 B preferred.
- ``pairwise_win_rates``: per (A, B) the wins, ties and losses of A and its win rate (W + T/2) / N, with a
  percentile bootstrap CI that resamples *items* (all judgments of an item move together, since the raters of
  one item and the pairs of one ranking are not independent).
- ``preference_agreement``: on the comparisons (item, candidate pair) judged by at least two raters: observed
  agreement, Krippendorff's alpha (ordinal, over -1 < 0 < +1) and quadratic-weighted Cohen's kappa per rater
  pair (``fire_metrics``), and each rater's agreement with the others.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from evaluation.fire.metrics import krippendorff_alpha, pairwise_weighted_kappa
from evaluation.stats import ConfidenceInterval, percentile_interval

OUTCOMES = (-1, 0, 1)  # B preferred < tie < A preferred: an ordinal scale
_BOOTSTRAP_CELLS = 4_000_000  # resamples x items held at once (32 MB of float64)


@dataclass(frozen=True)
class RankedJudgment:
    item: Hashable
    rater: Hashable
    candidates: tuple[str, ...]  # label per candidate, candidate 1 first
    groups: tuple[tuple[int, ...], ...]  # candidate numbers (1-based), best group first; a group is a tie

    def __post_init__(self) -> None:
        numbers = sorted(n for group in self.groups for n in group)
        if numbers != list(range(1, len(self.candidates) + 1)):
            raise ValueError(f"the ranking of item {self.item!r} by {self.rater!r} must name each of the "
                             f"candidates 1-{len(self.candidates)} exactly once, got {self.groups!r}")


@dataclass(frozen=True)
class PairJudgment:
    item: Hashable
    rater: Hashable
    model_a: str
    model_b: str
    candidates: tuple[int, int]  # the candidate numbers compared: A's, then B's
    outcome: int  # +1 A preferred, 0 tie, -1 B preferred

    @property
    def unit(self) -> tuple[Hashable, ...]:  # (item, lower candidate, higher candidate)
        """What raters agree or disagree on: one comparison of two candidates of one item."""
        return (self.item, *sorted(self.candidates))


def label_order(judgments: Iterable[RankedJudgment]) -> list[str]:
    """Labels in first-seen order (items in the order given, candidates in the order shown)."""
    return list(dict.fromkeys(label for j in judgments for label in j.candidates))


def pair_judgments(judgments: Iterable[RankedJudgment], *, order: Sequence[str] | None = None) -> list[PairJudgment]:
    """One judgment per (ranking, pair of candidates with different labels); A comes first in ``order``
    (default: first-seen order). Two candidates with the same label (one model twice) are not compared."""
    judgments = list(judgments)
    position = {label: n for n, label in enumerate(order if order is not None else label_order(judgments))}
    result = []
    for judgment in judgments:
        rank = {number: level for level, group in enumerate(judgment.groups) for number in group}
        for first, second in itertools.combinations(range(1, len(judgment.candidates) + 1), 2):
            label_first, label_second = judgment.candidates[first - 1], judgment.candidates[second - 1]
            if label_first == label_second:
                continue
            if position[label_first] > position[label_second]:
                first, second, label_first, label_second = second, first, label_second, label_first
            # A lower level is better: A is preferred when its level is the lower one.
            outcome = (rank[first] < rank[second]) - (rank[first] > rank[second])
            result.append(PairJudgment(judgment.item, judgment.rater, label_first, label_second, (first, second),
                                       outcome))
    return result


# --- win rates --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairResult:
    model_a: str
    model_b: str
    items: int
    judgments: int
    wins: int  # A preferred
    ties: int
    losses: int  # B preferred
    win_rate: Fraction | None  # (wins + ties / 2) / judgments: A's share, ties counted half; None: no judgments
    ci: ConfidenceInterval | None


def win_rate(wins: int, ties: int, losses: int) -> Fraction | None:
    total = wins + ties + losses
    return None if total == 0 else Fraction(2 * wins + ties, 2 * total)


def bootstrap_win_rate_ci(
    per_item: Sequence[tuple[Fraction | float, int]], *, n_resamples: int = 2000, seed: int = 0,
    confidence: float = 0.95,
) -> ConfidenceInterval | None:
    """Percentile bootstrap CI of sum(points) / sum(judgments), resampling items with replacement.

    ``per_item``: (A's points = wins + ties / 2, judgments) per item. A resample draws each item a multinomial
    number of times, so the ratio is weights @ points / weights @ judgments.
    """
    if not per_item:
        return None
    points = np.array([float(p) for p, _ in per_item])
    counts = np.array([n for _, n in per_item], dtype=float)
    items = len(per_item)
    rng = np.random.default_rng(seed)
    chunk = max(1, _BOOTSTRAP_CELLS // items)
    samples = []
    for start in range(0, n_resamples, chunk):
        weights = rng.multinomial(items, np.full(items, 1 / items), size=min(chunk, n_resamples - start))
        samples.append((weights @ points) / (weights @ counts))
    return percentile_interval(np.concatenate(samples), confidence)


def pairwise_win_rates(
    pairs: Iterable[PairJudgment], *, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95,
) -> list[PairResult]:
    """Per (model A, model B), in first-seen order: counts, win rate of A and its bootstrap CI over items."""
    by_pair: dict[tuple[str, str], dict[Hashable, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    for pair in pairs:
        cell = by_pair[(pair.model_a, pair.model_b)][pair.item]
        cell[{1: 0, 0: 1, -1: 2}[pair.outcome]] += 1
    results = []
    for (model_a, model_b), items in by_pair.items():
        wins, ties, losses = (sum(cell[k] for cell in items.values()) for k in range(3))
        per_item = [(Fraction(2 * w + t, 2), w + t + lost) for w, t, lost in items.values()]
        results.append(PairResult(
            model_a=model_a, model_b=model_b, items=len(items), judgments=wins + ties + losses,
            wins=wins, ties=ties, losses=losses, win_rate=win_rate(wins, ties, losses),
            ci=bootstrap_win_rate_ci(per_item, n_resamples=n_resamples, seed=seed, confidence=confidence),
        ))
    return results


# --- agreement --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RaterAgreement:
    rater: Hashable
    items: int  # items where the rater shares a comparison with another rater
    comparisons: int  # (own judgment, another rater's judgment of the same comparison) pairs
    agreeing: int
    mean_kappa: float | None  # mean of the defined kappas of the rater's pairs

    @property
    def agreement(self) -> Fraction | None:
        return Fraction(self.agreeing, self.comparisons) if self.comparisons else None


@dataclass(frozen=True)
class RaterPairAgreement:
    rater_a: Hashable
    rater_b: Hashable
    shared: int  # comparisons both judged
    agreeing: int
    kappa: float | None  # quadratic-weighted over -1/0/+1; None under 2 shared comparisons or undefined

    @property
    def agreement(self) -> Fraction | None:
        return Fraction(self.agreeing, self.shared) if self.shared else None


@dataclass(frozen=True)
class PreferenceAgreement:
    items: int  # items with at least one comparison judged by two or more raters
    units: int  # such comparisons
    raters: int  # raters with at least one such comparison
    rater_pairs_compared: int  # (unit, pair of its raters)
    rater_pairs_agreeing: int
    alpha_ordinal: float | None
    per_rater: list[RaterAgreement]
    per_pair: list[RaterPairAgreement]

    @property
    def agreement(self) -> Fraction | None:
        """Observed agreement: the share of (comparison, pair of its raters) with the same outcome."""
        if not self.rater_pairs_compared:
            return None
        return Fraction(self.rater_pairs_agreeing, self.rater_pairs_compared)


def preference_agreement(pairs: Iterable[PairJudgment]) -> PreferenceAgreement:
    """Agreement on the comparisons that two or more raters judged (the others cannot disagree)."""
    by_unit: dict[tuple[Hashable, ...], dict[Hashable, int]] = defaultdict(dict)
    for pair in pairs:
        if pair.rater in by_unit[pair.unit]:
            raise ValueError(f"rater {pair.rater!r} judged comparison {pair.unit!r} more than once")
        by_unit[pair.unit][pair.rater] = pair.outcome
    shared = {unit: raters for unit, raters in by_unit.items() if len(raters) >= 2}
    triples = [(unit, rater, outcome) for unit, raters in shared.items() for rater, outcome in raters.items()]

    rater_items: dict[Hashable, set[Hashable]] = defaultdict(set)
    rater_counts: dict[Hashable, list[int]] = defaultdict(lambda: [0, 0])  # comparisons, agreeing
    pair_counts: dict[tuple[Hashable, Hashable], list[int]] = defaultdict(lambda: [0, 0])
    compared = agreeing = 0
    rater_order = list(dict.fromkeys(rater for _, rater, _ in triples))
    rank = {rater: n for n, rater in enumerate(rater_order)}
    for unit, raters in shared.items():
        for a, b in itertools.combinations(sorted(raters, key=rank.__getitem__), 2):
            same = int(raters[a] == raters[b])
            compared += 1
            agreeing += same
            pair_counts[(a, b)][0] += 1
            pair_counts[(a, b)][1] += same
            for rater in (a, b):
                rater_items[rater].add(unit[0])
                rater_counts[rater][0] += 1
                rater_counts[rater][1] += same

    kappas = pairwise_weighted_kappa(triples, labels=list(OUTCOMES)) if triples else {}
    per_pair = [
        RaterPairAgreement(a, b, shared=n, agreeing=k, kappa=kappas.get((a, b), kappas.get((b, a))))
        for (a, b), (n, k) in pair_counts.items()
    ]
    per_rater = []
    for rater in rater_order:
        own = [p.kappa for p in per_pair if rater in (p.rater_a, p.rater_b) and p.kappa is not None]
        per_rater.append(RaterAgreement(
            rater=rater, items=len(rater_items[rater]), comparisons=rater_counts[rater][0],
            agreeing=rater_counts[rater][1], mean_kappa=sum(own) / len(own) if own else None,
        ))
    return PreferenceAgreement(
        items=len({unit[0] for unit in shared}),
        units=len(shared),
        raters=len(rater_order),
        rater_pairs_compared=compared,
        rater_pairs_agreeing=agreeing,
        alpha_ordinal=krippendorff_alpha(triples, level="ordinal", value_domain=list(OUTCOMES)) if triples else None,
        per_rater=per_rater,
        per_pair=per_pair,
    )
