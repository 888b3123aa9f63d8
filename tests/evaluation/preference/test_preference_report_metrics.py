"""Pairwise preference metrics on hand-computed values: judgments from rankings with ties, win rates with
item-level bootstrap CIs, agreement (observed, per rater, per rater pair, kappa, alpha)."""

from fractions import Fraction

import krippendorff
import numpy as np
import pytest

from evaluation.preference.metrics import (
    PairJudgment,
    RankedJudgment,
    bootstrap_win_rate_ci,
    label_order,
    name_key,
    pair_judgments,
    pairwise_win_rates,
    preference_agreement,
    win_rate,
)


def ranked(item, rater, labels, *groups):
    return RankedJudgment(item, rater, tuple(labels), tuple(tuple(g) for g in groups))


def outcomes(pairs):
    return [(p.model_a, p.model_b, p.candidates, p.outcome) for p in pairs]


@pytest.mark.parametrize("labels, groups, order, expected", [
    # 1>2=3: A beats B and C; B and C tie.
    ("ABC", [(1,), (2, 3)], None, [("A", "B", (1, 2), 1), ("A", "C", (1, 3), 1), ("B", "C", (2, 3), 0)]),
    # 3>1>2: levels 3->0, 1->1, 2->2.
    ("ABC", [(3,), (1,), (2,)], None, [("A", "B", (1, 2), 1), ("A", "C", (1, 3), -1), ("B", "C", (2, 3), -1)]),
    # Shown as (B, A) but oriented (A, B) by the given order: B ranked first is a loss for A.
    ("BA", [(1,), (2,)], ["A", "B"], [("A", "B", (2, 1), -1)]),
    # One model twice: its two candidates are not compared with each other.
    ("AAB", [(1, 2, 3)], None, [("A", "B", (1, 3), 0), ("A", "B", (2, 3), 0)]),
])
def test_pair_judgments(labels, groups, order, expected):
    assert outcomes(pair_judgments([ranked("i", "r", labels, *groups)], order=order)) == expected


def test_a_ranking_must_name_every_candidate_once():
    with pytest.raises(ValueError, match="exactly once"):
        ranked("i", "r", "ABC", (1,), (2,))


def test_win_rates_count_ties_half():
    judgments = [
        ranked("i1", "r1", "AB", (1,), (2,)),  # A
        ranked("i1", "r2", "AB", (1, 2)),  # tie
        ranked("i2", "r1", "AB", (2,), (1,)),  # B
        ranked("i3", "r1", "BA", (2,), (1,)),  # A (shown second)
    ]
    [result] = pairwise_win_rates(pair_judgments(judgments), n_resamples=500)
    # (2 wins + 1 tie / 2) / 4 judgments = 5/8; items i1, i2, i3.
    assert (result.model_a, result.model_b, result.items, result.judgments) == ("A", "B", 3, 4)
    assert (result.wins, result.ties, result.losses, result.win_rate) == (2, 1, 1, Fraction(5, 8))
    assert 0 <= result.ci.low <= 5 / 8 <= result.ci.high <= 1
    again = pairwise_win_rates(pair_judgments(judgments), n_resamples=500)[0]
    assert (again.ci.low, again.ci.high) == (result.ci.low, result.ci.high)  # seeded


def test_win_rate_undefined_without_judgments():
    assert win_rate(0, 0, 0) is None
    assert win_rate(1, 1, 0) == Fraction(3, 4)
    assert bootstrap_win_rate_ci([]) is None


def test_bootstrap_resamples_items_not_judgments():
    # Two items of 100 judgments: A always wins in one, always loses in the other. Resampling items gives
    # 0 (p 1/4), 1/2 (p 1/2) or 1 (p 1/4), so the 95% interval is [0, 1]; resampling the 200 judgments
    # independently would give about [0.43, 0.57].
    ci = bootstrap_win_rate_ci([(Fraction(100), 100), (Fraction(0), 100)], n_resamples=4000)
    assert (ci.low, ci.high) == (0.0, 1.0)
    # Identical items leave nothing to vary: the interval is the point.
    ci = bootstrap_win_rate_ci([(Fraction(3, 2), 2), (Fraction(3, 2), 2)])
    assert (ci.low, ci.high) == (0.75, 0.75)


def test_bootstrap_in_chunks_matches_the_ratio_bounds(monkeypatch):
    from evaluation.preference import metrics as preference_metrics

    monkeypatch.setattr(preference_metrics, "_BOOTSTRAP_CELLS", 7)  # many small chunks
    ci = bootstrap_win_rate_ci([(Fraction(1), 1), (Fraction(0), 1), (Fraction(1, 2), 1)], n_resamples=300)
    assert 0 <= ci.low < 0.5 < ci.high <= 1


# Three raters on item i1 (candidates A, B, C), one on i2.
AGREEMENT = [
    ranked("i1", "r1", "ABC", (1,), (2,), (3,)),  # AB +1, AC +1, BC +1
    ranked("i1", "r2", "ABC", (1,), (2, 3)),  # AB +1, AC +1, BC 0
    ranked("i1", "r3", "ABC", (2,), (1,), (3,)),  # AB -1, AC +1, BC +1
    ranked("i2", "r1", "AB", (1,), (2,)),  # one rater: cannot disagree
]


def test_agreement_on_comparisons_with_two_or_more_raters():
    result = preference_agreement(pair_judgments(AGREEMENT))
    assert (result.items, result.units, result.raters) == (1, 3, 3)
    # Per comparison, rater pairs agreeing: AB 1 (r1-r2), AC 3, BC 1 (r1-r3) -> 5 of 9.
    assert (result.rater_pairs_agreeing, result.rater_pairs_compared, result.agreement) == (5, 9, Fraction(5, 9))
    per_rater = {r.rater: (r.items, r.comparisons, r.agreeing) for r in result.per_rater}
    assert per_rater == {"r1": (1, 6, 4), "r2": (1, 6, 3), "r3": (1, 6, 3)}
    per_pair = {(p.rater_a, p.rater_b): (p.shared, p.agreeing) for p in result.per_pair}
    assert per_pair == {("r1", "r2"): (3, 2), ("r1", "r3"): (3, 2), ("r2", "r3"): (3, 1)}


def test_kappa_and_alpha():
    result = preference_agreement(pair_judgments(AGREEMENT))
    kappas = {(p.rater_a, p.rater_b): p.kappa for p in result.per_pair}
    # Each comparison counts twice, as judged and mirrored (outcome negated); quadratic weights (i - j)^2 / 4 over
    # -1, 0, +1. r1 (+1, +1, +1) and r2 (+1, +1, 0) give pairs (1,1) (1,1) (1,0) and their mirrors: observed
    # (1/4 + 1/4) / 6 = 1/12; marginals r1 (1/2, 0, 1/2), r2 (1/3, 1/3, 1/3): expected 5/12; kappa 1 - 1/5 = 0.8.
    assert kappas[("r1", "r2")] == pytest.approx(0.8)
    # r1 against r3 (-1, +1, +1): observed (1 + 1) / 6 = 1/3, marginals both (1/2, 0, 1/2): expected 1/2, 1/3.
    assert kappas[("r1", "r3")] == pytest.approx(1 / 3)
    # r2 against r3: observed (1 + 1/4) * 2 / 6 = 5/12, expected (1/3)(1/2 + 1/4 + 1/2) = 5/12: kappa 0.
    assert kappas[("r2", "r3")] == pytest.approx(0.0, abs=1e-12)
    means = {r.rater: r.mean_kappa for r in result.per_rater}
    assert means == pytest.approx({"r1": (0.8 + 1 / 3) / 2, "r2": 0.4, "r3": 1 / 6})
    # Alpha against the krippendorff package on the raters x comparisons matrix built by hand, mirrors included.
    matrix = np.array([[1, 1, 1], [1, 1, 0], [-1, 1, 1]], dtype=float)
    expected = krippendorff.alpha(reliability_data=np.hstack([matrix, -matrix]), level_of_measurement="ordinal",
                                  value_domain=[-1, 0, 1])
    assert result.alpha_ordinal == pytest.approx(expected)


# Three models, one pair of them per item, each item showing its pair in its own order; two raters.
# Comparisons in the canonical orientation (X < Y < Z): i1 X vs Y: +1, +1; i2 Y vs Z: +1, 0; i3 X vs Z (Z shown
# first): +1, 0. Oriented by the first model the file shows instead, i3 first makes Z "A" of two comparisons:
# alpha went from -0.25 to 0.583 and kappa from 0 to 0.571 with nothing rated differently.
ROTATED = [
    ranked("i1", "r1", "XY", (1,), (2,)), ranked("i1", "r2", "XY", (1,), (2,)),
    ranked("i2", "r1", "YZ", (1,), (2,)), ranked("i2", "r2", "YZ", (1, 2)),
    ranked("i3", "r1", "ZX", (2,), (1,)), ranked("i3", "r2", "ZX", (1, 2)),
]


def _flip(labels: str) -> str:
    """The models renamed so that every pair changes orientation: X -> c, Y -> b, Z -> a."""
    return labels.translate(str.maketrans("XYZ", "cba"))


def _summary(judgments, back=lambda label: label):
    """Alpha, each kappa, agreement and each model's win rate over each other model (names mapped back)."""
    pairs = pair_judgments(judgments)
    agreement = preference_agreement(pairs)
    rates = {}
    for result in pairwise_win_rates(pairs, n_resamples=200):
        a, b = back(result.model_a), back(result.model_b)
        rates[(a, b)], rates[(b, a)] = result.win_rate, 1 - result.win_rate
    kappas = {(p.rater_a, p.rater_b): p.kappa for p in agreement.per_pair}
    return agreement.alpha_ordinal, kappas, agreement.agreement, rates


def test_agreement_and_win_rates_do_not_depend_on_record_order_or_names():
    # Hand-derived, both orientations counted: comparisons (1,1) (1,0) (1,0) and mirrors (-1,-1) (-1,0) (-1,0):
    # values -1, 0, +1 four times each (n = 12); coincidences o(-1,0) = o(0,-1) = o(0,1) = o(1,0) = 2; ordinal
    # delta^2(-1,0) = delta^2(0,1) = (8 - 4)^2 = 16, delta^2(-1,1) = (12 - 4)^2 = 64. D_o = 8 * 16 = 128,
    # D_e = 2 * (16*16 + 16*16 + 16*64) = 3072, alpha = 1 - 11 * 128 / 3072 = 13/24.
    # Kappa r1 vs r2: observed 4 * 1/4 / 6 = 1/6; marginals r1 (1/2, 0, 1/2), r2 (1/6, 2/3, 1/6): expected
    # 2 * 1/2 * (2/3 * 1/4 + 1/6 * 1) = 1/3; kappa = 1/2. Agreement: i1 only, 1 of 3.
    # Win rates: X over Y 2/2, X over Z (1 + 1/2) / 2 = 3/4, Y over Z (1 + 1/2) / 2 = 3/4.
    expected_rates = {("X", "Y"): Fraction(1), ("X", "Z"): Fraction(3, 4), ("Y", "Z"): Fraction(3, 4)}
    expected_rates |= {(b, a): 1 - rate for (a, b), rate in expected_rates.items()}
    alpha, kappas, agreement, rates = _summary(ROTATED)
    assert alpha == pytest.approx(13 / 24)
    assert kappas == {("r1", "r2"): pytest.approx(0.5)}
    assert agreement == Fraction(1, 3)
    assert rates == expected_rates

    reordered = [ROTATED[i] for i in (4, 5, 0, 1, 2, 3)]  # i3 first: Z is the first model the file shows
    assert _summary(reordered) == (pytest.approx(13 / 24), {("r1", "r2"): pytest.approx(0.5)}, Fraction(1, 3),
                                   expected_rates)
    renamed = [RankedJudgment(j.item, j.rater, tuple(_flip("".join(j.candidates))), j.groups) for j in ROTATED]
    back = {"c": "X", "b": "Y", "a": "Z"}.__getitem__
    assert _summary(renamed, back) == (pytest.approx(13 / 24), {("r1", "r2"): pytest.approx(0.5)},
                                       Fraction(1, 3), expected_rates)


def test_win_rate_intervals_do_not_depend_on_record_order():
    forward = pairwise_win_rates(pair_judgments(ROTATED), n_resamples=300)
    backward = pairwise_win_rates(pair_judgments(ROTATED[::-1]), n_resamples=300)
    assert [(r.model_a, r.model_b, r.ci) for r in forward] == [(r.model_a, r.model_b, r.ci) for r in backward]


def test_labels_sort_by_name_with_numbers_as_numbers():
    judgments = [ranked("i", "r", ["Candidate 10", "Candidate 2", "beta", "Alpha"], (1, 2, 3, 4))]
    assert label_order(judgments) == ["Alpha", "beta", "Candidate 2", "Candidate 10"]
    assert sorted(["item-10", "item-9", "Item-1"], key=name_key) == ["Item-1", "item-9", "item-10"]


def test_no_shared_comparisons_means_no_agreement():
    result = preference_agreement(pair_judgments([ranked("i1", "r1", "AB", (1,), (2,)),
                                                  ranked("i2", "r2", "AB", (2,), (1,))]))
    assert (result.units, result.agreement, result.alpha_ordinal, result.per_pair) == (0, None, None, [])


def test_a_rater_judging_a_comparison_twice_is_an_error():
    twice = [PairJudgment("i", "r", "A", "B", (1, 2), 1)] * 2
    with pytest.raises(ValueError, match="more than once"):
        preference_agreement(twice)
