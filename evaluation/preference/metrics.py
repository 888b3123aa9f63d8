"""Pairwise preference metrics over plain data (no ORM), for batches of kind ``preference``.

Input shape: one ``RankedJudgment`` per (item, rater): the label of each candidate in the order shown
(candidate 1 first; a label is a model name, or "Candidate k" when the data names no models) and the rater's
ranking as groups of candidate numbers, best group first, a group being a tie (``1>2=3`` → ``((1,), (2, 3))``).

Nothing here depends on the order of the records or on which model is called "A":

- ``label_order``: labels in one canonical order, by name (numbers inside a name compared as numbers, so
  "Candidate 2" comes before "Candidate 10"), never the order the file happens to show them in.
- ``pair_judgments``: every ranking becomes one judgment per pair of candidates with different labels,
  oriented (model A, model B) by that order: +1 A preferred, 0 tie, -1 B preferred.
- ``pairwise_win_rates``: per (A, B) the wins, ties and losses of A and its win rate (W + T/2) / N, with a
  percentile bootstrap CI that resamples *items* (all judgments of an item move together, since the raters of
  one item and the pairs of one ranking are not independent), items taken in the order of their ids.
- ``preference_agreement``: on the comparisons (item, candidate pair) judged by at least two raters: observed
  agreement, Krippendorff's alpha (ordinal, over -1 < 0 < +1) and quadratic-weighted Cohen's kappa per rater
  pair (``fire_metrics``), and each rater's agreement with the others. Alpha and kappa count every comparison
  in both orientations (A vs B and B vs A, the outcome negated), so renaming a model, which flips the
  orientation of some comparisons and not others, changes neither.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from evaluation.fire.rating_metrics import krippendorff_alpha, pairwise_weighted_kappa
from evaluation.stats import ConfidenceInterval, percentile_interval

OUTCOMES = (-1, 0, 1)  # B preferred < tie < A preferred: an ordinal scale
MIN_SHARED_FOR_KAPPA = 2  # comparisons two raters share before their kappa is reported
_BOOTSTRAP_CELLS = 4_000_000  # resamples x items held at once (32 MB of float64)
_DIGITS = re.compile(r"(\d+)")


@functools.lru_cache(maxsize=1 << 16)  # item ids, raters and models recur in every sort of a report
def name_key(name: object) -> tuple[tuple[int | str, ...], str]:
    """Sort key of a label, an item id or a rater: by text, numbers inside compared as numbers
    ("Candidate 2" < "Candidate 10"), then the exact text, so the order is total and never the file's."""
    text = str(name)
    parts = tuple(int(part) if index % 2 else part.casefold() for index, part in enumerate(_DIGITS.split(text)))
    return parts, text


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
    """Every label in the canonical order (``name_key``): the same whatever the order of the records."""
    return sorted({label for j in judgments for label in j.candidates}, key=name_key)


def pair_judgments(judgments: Iterable[RankedJudgment], *, order: Sequence[str] | None = None) -> list[PairJudgment]:
    """One judgment per (ranking, pair of candidates with different labels); A comes first in ``order``
    (default: the canonical ``label_order``). Two candidates with the same label (one model twice) are not
    compared."""
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
    """Per (model A, model B), A before B in the canonical order: counts, win rate of A and its bootstrap CI
    over items. Pairs, and the items of each pair (which the bootstrap draws), come in canonical order, so the
    same judgments in any order give the same rows, CIs included."""
    by_pair: dict[tuple[str, str], dict[Hashable, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    for pair in pairs:
        cell = by_pair[(pair.model_a, pair.model_b)][pair.item]
        cell[{1: 0, 0: 1, -1: 2}[pair.outcome]] += 1
    results = []
    for model_a, model_b in sorted(by_pair, key=lambda models: (name_key(models[0]), name_key(models[1]))):
        items = by_pair[(model_a, model_b)]
        wins, ties, losses = (sum(cell[k] for cell in items.values()) for k in range(3))
        per_item = [(Fraction(2 * w + t, 2), w + t + lost)
                    for w, t, lost in (items[item] for item in sorted(items, key=name_key))]
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


def _unit_key(unit: tuple[Hashable, ...]) -> tuple[tuple[tuple[int | str, ...], str], ...]:
    return tuple(name_key(part) for part in unit)


def both_orientations(
    shared: dict[tuple[Hashable, ...], dict[Hashable, int]],
) -> list[tuple[tuple[Hashable, ...], Hashable, int]]:
    """(unit, rater, outcome) for alpha and kappa, each comparison twice: as judged (A vs B) and mirrored
    (B vs A, the outcome negated). Which model a name makes "A" then changes nothing: a flipped comparison
    is the other copy. Units and raters in canonical order."""
    triples = []
    for unit in sorted(shared, key=_unit_key):
        for rater in sorted(shared[unit], key=name_key):
            outcome = shared[unit][rater]
            triples += [((*unit, "A vs B"), rater, outcome), ((*unit, "B vs A"), rater, -outcome)]
    return triples


def preference_agreement(pairs: Iterable[PairJudgment]) -> PreferenceAgreement:
    """Agreement on the comparisons that two or more raters judged (the others cannot disagree).

    Observed agreement counts each comparison once (the same outcome agrees in either orientation); alpha and
    kappa take each comparison in both orientations (``both_orientations``). Raters, their pairs and the
    comparisons are taken in canonical order, so the result never depends on the order of the records.
    """
    by_unit: dict[tuple[Hashable, ...], dict[Hashable, int]] = defaultdict(dict)
    for pair in pairs:
        if pair.rater in by_unit[pair.unit]:
            raise ValueError(f"rater {pair.rater!r} judged comparison {pair.unit!r} more than once")
        by_unit[pair.unit][pair.rater] = pair.outcome
    shared = {unit: raters for unit, raters in by_unit.items() if len(raters) >= 2}
    triples = both_orientations(shared)

    rater_items: dict[Hashable, set[Hashable]] = defaultdict(set)
    rater_counts: dict[Hashable, list[int]] = defaultdict(lambda: [0, 0])  # comparisons, agreeing
    pair_counts: dict[tuple[Hashable, Hashable], list[int]] = defaultdict(lambda: [0, 0])
    compared = agreeing = 0
    rater_order = sorted({rater for raters in shared.values() for rater in raters}, key=name_key)
    for unit in sorted(shared, key=_unit_key):
        raters = shared[unit]
        for a, b in itertools.combinations(sorted(raters, key=name_key), 2):
            same = int(raters[a] == raters[b])
            compared += 1
            agreeing += same
            pair_counts[(a, b)][0] += 1
            pair_counts[(a, b)][1] += same
            for rater in (a, b):
                rater_items[rater].add(unit[0])
                rater_counts[rater][0] += 1
                rater_counts[rater][1] += same

    # Two copies per comparison: a pair of raters sharing MIN_SHARED_FOR_KAPPA comparisons shares twice as many.
    kappas = (pairwise_weighted_kappa(triples, labels=list(OUTCOMES), min_shared_items=2 * MIN_SHARED_FOR_KAPPA)
              if triples else {})
    per_pair = [
        RaterPairAgreement(a, b, shared=n, agreeing=k, kappa=kappas.get((a, b), kappas.get((b, a))))
        for (a, b), (n, k) in sorted(pair_counts.items(), key=lambda kv: (name_key(kv[0][0]), name_key(kv[0][1])))
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
