"""FIRE metrics: expected values are worked out by hand in the comments (or published, where cited)."""

import math
from decimal import Decimal
from fractions import Fraction

import krippendorff
import numpy as np
import pytest

from evaluation.exporters.tables import render
from evaluation.fire_metrics import (
    bleu_scores,
    bootstrap_mean_ci,
    cider_d,
    cider_d_per_item,
    disagreement_items,
    fire_rating_table,
    free_dialogue_metrics,
    krippendorff_alpha,
    mean_absolute_error,
    pairwise_weighted_kappa,
    reliability_matrix,
    summarize_ratings,
)

# --- free dialogue ----------------------------------------------------------------------------------

# Teacher scores per dialogue; threshold 8, n_max 5, punishment 10.
DIALOGUES = [
    [3, 10],  # t=2, solved -> n=2;   gain 7;  per turn 7/1;  RR 1 - 0 = 1
    [4, 6, 9],  # t=3, solved -> n=3; gain 5;  per turn 5/2;  RR 1 - 0 = 1
    [9],  # t=1: excluded from all four metrics
    [2, 3, 4, 5, 6, 7],  # never reaches 8 -> n=10 (punishment); gain 5; per turn 5/5; RR 0 - 0 = 0
    [8, 5],  # got worse -> n=10;      gain -3; per turn -3/1; RR 0 - 1 = -1
    [1, 2, 3, 4, 5, 9],  # reaches 8 but only in turn 6 > n_max -> n=10; gain 8; per turn 8/5; RR 1
]


def test_free_dialogue_metrics_worked_example():
    metrics = free_dialogue_metrics(DIALOGUES)
    assert (metrics.dialogues, metrics.excluded_single_turn) == (5, 1)
    assert metrics.average_turn == Fraction(7)  # (2 + 3 + 10 + 10 + 10) / 5 = 35 / 5
    assert metrics.average_dialogue_refinement == Fraction(22, 5)  # (7 + 5 + 5 - 3 + 8) / 5 = 4.4
    assert metrics.average_turn_refinement == Fraction(91, 50)  # (7 + 2.5 + 1 - 3 + 1.6) / 5 = 1.82
    assert metrics.refinement_ratio == Fraction(2, 5)  # (1 + 1 + 0 - 1 + 1) / 5


def test_free_dialogue_metrics_parameters():
    # AT relative to a baseline model whose AT is 3.5: 7 / 3.5 = 2
    assert free_dialogue_metrics(DIALOGUES, at_baseline=3.5).average_turn == 2
    # n_max 6 lets the last dialogue count with its 6 turns: (2 + 3 + 10 + 10 + 6) / 5 = 31/5
    assert free_dialogue_metrics(DIALOGUES, n_max=6).average_turn == Fraction(31, 5)
    # threshold 7 also counts dialogue 4 as solved in 6 > 5 turns (still punished: n=10) but RR changes:
    # RR = (1 + 1 + 1 + (0 - 1) + 1) / 5 = 3/5
    assert free_dialogue_metrics(DIALOGUES, threshold=7).refinement_ratio == Fraction(3, 5)
    # punishment 20: (2 + 3 + 20 + 20 + 20) / 5 = 13
    assert free_dialogue_metrics(DIALOGUES, punishment=20).average_turn == 13


def test_free_dialogue_metrics_with_only_single_turn_dialogues():
    metrics = free_dialogue_metrics([[9], [3]])
    assert metrics.average_turn is None and metrics.refinement_ratio is None
    assert (metrics.dialogues, metrics.excluded_single_turn) == (0, 2)


def test_free_dialogue_rejects_an_empty_dialogue():
    with pytest.raises(ValueError):
        free_dialogue_metrics([[]])


# --- fixed dialogue -------------------------------------------------------------------------------


def test_bleu_of_an_identical_hypothesis_is_100():
    scores = bleu_scores(["the cat sat on the mat"], [["the cat sat on the mat"]])
    assert scores == pytest.approx({1: 100.0, 2: 100.0, 3: 100.0, 4: 100.0})


def test_bleu_worked_example():
    scores = bleu_scores(["the cat the cat"], [["the cat sat on the mat"]], max_order=2)
    brevity_penalty = math.exp(1 - 6 / 4)  # hypothesis 4 tokens, reference 6
    # unigrams: "the" min(2, 2) + "cat" min(2, 1) = 3 of 4
    assert scores[1] == pytest.approx(100 * 3 / 4 * brevity_penalty)  # 45.49
    # bigrams: "the cat" min(2, 1) = 1, "cat the" 0 -> 1 of 3; sqrt(3/4 * 1/3) = 1/2
    assert scores[2] == pytest.approx(100 * 0.5 * brevity_penalty)  # 30.33


def test_bleu_accepts_a_varying_number_of_references():
    scores = bleu_scores(["a b c d", "e f g h"], [["a b c d", "x y"], ["e f g h"]])
    assert scores[4] == pytest.approx(100.0)


def test_cider_d_worked_example():
    # Two items, one reference each: "a b" and "c d"; N = 2, so idf = log 2 for any n-gram in one doc.
    # Item 1 "a b" = its reference: cosine 1 for n = 1, 2; n = 3, 4 are empty -> 0.
    #   score = 10 * (1 + 1 + 0 + 0) / 4 = 5
    # Item 2 "c e": unigram vectors (log2, log2) over {c, e} and {c, d}; clipped dot = log2^2;
    #   norms sqrt(2) log2 each -> 1/2. Bigrams do not overlap -> 0. Same length, no penalty.
    #   score = 10 * (1/2 + 0 + 0 + 0) / 4 = 1.25
    per_item = cider_d_per_item(["a b", "c e"], [["a b"], ["c d"]])
    assert per_item == pytest.approx([5.0, 1.25])
    assert cider_d(["a b", "c e"], [["a b"], ["c d"]]) == pytest.approx(3.125)  # (5 + 1.25) / 2


def test_cider_d_identical_four_grams_score_10_and_tokenizing_ignores_case_and_punctuation():
    # No n-gram is shared between items, so every idf is log 2 and each identical pair has cosine 1.
    references = [["a man rides a horse"], ["two dogs play in snow"]]
    assert cider_d(["A man rides a horse.", "two dogs play in snow"], references) == pytest.approx(10.0)


def test_cider_d_length_penalty():
    # "a b c" vs reference "a b c d e" on a one-item corpus: idf = log 1 - log 1 = 0, so every
    # weight is 0 and the score is 0 whatever the penalty; add a second item to give weights.
    references = [["a b c d e"], ["v w x y z"]]
    # bigram lengths 2 vs 4 -> delta 2 -> penalty exp(-4 / 72)
    penalty = math.exp(-4 / (2 * 36))
    # n=1: hyp {a,b,c} each log2, ref {a..e} each log2 -> dot 3 log2^2 / (sqrt3 log2 * sqrt5 log2) = 3/sqrt15
    # n=2: 2 / (sqrt2 * sqrt4) = 1/sqrt2; n=3: 1 / (1 * sqrt3); n=4: hyp empty -> 0
    expected = 10 * penalty * (3 / math.sqrt(15) + 1 / math.sqrt(2) + 1 / math.sqrt(3)) / 4
    assert cider_d_per_item(["a b c", "v w x y z"], references)[0] == pytest.approx(expected)


def test_text_metrics_reject_misaligned_input():
    with pytest.raises(ValueError):
        bleu_scores(["a"], [])
    with pytest.raises(ValueError):
        cider_d(["a"], [[]])


def test_mean_absolute_error():
    # |8 - 10| + |5 - 5| + |3 - 2| = 3 over 3 pairs
    assert mean_absolute_error([8, 5, 3], [10, 5, 2]) == 1
    assert mean_absolute_error([7.5], [8]) == Fraction(1, 2)
    assert mean_absolute_error([], []) is None
    with pytest.raises(ValueError):
        mean_absolute_error([1], [1, 2])


# --- human ratings: means -------------------------------------------------------------------------


def test_summarize_ratings_groups_by_any_key():
    scored = [
        (("test", "feedback"), 4),
        (("test", "feedback"), 5),
        (("test", "response"), 2),
        (("dev", "feedback"), 3),
    ]
    summaries = summarize_ratings(scored, seed=1)
    assert list(summaries) == [("test", "feedback"), ("test", "response"), ("dev", "feedback")]
    assert summaries[("test", "feedback")].mean == Fraction(9, 2)  # (4 + 5) / 2
    assert summaries[("test", "feedback")].count == 2
    assert (summaries[("test", "response")].ci.low, summaries[("test", "response")].ci.high) == (2.0, 2.0)


def test_bootstrap_mean_ci_is_seeded_and_contains_the_mean():
    scores = [1, 2, 2, 3, 3, 3, 4, 4, 5, 5, 5, 5]  # mean 42 / 12 = 3.5
    first = bootstrap_mean_ci(scores, seed=3)
    assert first == bootstrap_mean_ci(scores, seed=3)
    assert 3.5 in first
    assert 1 <= first.low < 3.5 < first.high <= 5
    assert bootstrap_mean_ci([]) is None


def test_fire_rating_table():
    ratings = [
        ("fire_test", "feedback", 4),
        ("fire_test", "feedback", 5),  # mean 4.5
        ("fire_test", "response", 3),  # mean 3
        ("fire_dev", "feedback", 2),  # mean 2; no response ratings
    ]
    table = fire_rating_table(ratings, seed=0)
    assert table.columns[:3] == ["Split", "#Feedback", "Feedback"]
    assert [row[:3] for row in table.rows] == [
        ["fire_test", 2, Decimal("4.50")],
        ["fire_dev", 1, Decimal("2.00")],
        ["All", 3, Decimal("3.67")],  # (4 + 5 + 2) / 3 = 3.666... -> 3.67
    ]
    assert table.rows[0][4:6] == [1, Decimal("3.00")]
    assert table.rows[0][6] == "[3.00, 3.00]"  # one rating: every resample has mean 3
    assert table.rows[1][4:] == [0, None, None]
    assert "| fire_dev | 1 | 2.00 | [2.00, 2.00] | 0 | - | - |" in render(table, "md")


def test_fire_rating_table_rejects_unknown_turn_kind():
    with pytest.raises(ValueError, match="turn kind"):
        fire_rating_table([("test", "question", 3)])


# --- human ratings: agreement ---------------------------------------------------------------------

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: 4 observers x 12 units,
# values 1-5, None = missing. Published: nominal .743, ordinal .815, interval .849, ratio .797.
KRIPPENDORFF_2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def _triples(table: dict[str, list]) -> list[tuple]:
    return [
        (f"u{unit}", rater, score)
        for rater, scores in table.items()
        for unit, score in enumerate(scores, start=1)
        if score is not None
    ]


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_krippendorff_alpha_matches_the_published_example(level, published):
    ratings = _triples(KRIPPENDORFF_2011)
    alpha = krippendorff_alpha(ratings, level=level)
    assert round(alpha, 3) == published
    # and equals the package called directly on the raters x units matrix (NaN = missing)
    matrix = np.array([[np.nan if v is None else v for v in row] for row in KRIPPENDORFF_2011.values()])
    assert alpha == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))


def test_krippendorff_alpha_small_hand_computed_example():
    # Two raters, three items: (1, 1), (2, 2), (3, 4). Pairable values 1, 1, 2, 2, 3, 4 (n = 6).
    ratings = [
        ("i1", "r1", 1),
        ("i1", "r2", 1),
        ("i2", "r1", 2),
        ("i2", "r2", 2),
        ("i3", "r1", 3),
        ("i3", "r2", 4),
    ]
    # interval: D_o = (2 * (3-4)^2) / 6 = 1/3; D_e = 2 * sum_{i<j}(v_i - v_j)^2 / (6 * 5)
    #   sum_{i<j} = n * sum v^2 - (sum v)^2 = 6 * 35 - 13^2 = 41 -> D_e = 82/30; alpha = 1 - (1/3)/(41/15) = 36/41
    assert krippendorff_alpha(ratings, level="interval") == pytest.approx(36 / 41)
    # ordinal, frequencies n1=2, n2=2, n3=1, n4=1; delta(c,k) = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2:
    #   d(1,2)=4, d(1,3)=12.25, d(1,4)=20.25, d(2,3)=2.25, d(2,4)=6.25, d(3,4)=1
    #   D_o = 2 * d(3,4) / 6 = 1/3
    #   D_e = 2 * (4*4 + 2*12.25 + 2*20.25 + 2*2.25 + 2*6.25 + 1*1) / 30 = 2 * 99 / 30 = 6.6
    #   alpha = 1 - (1/3) / 6.6 = 94/99
    assert krippendorff_alpha(ratings, level="ordinal") == pytest.approx(94 / 99)


def test_krippendorff_alpha_undefined_cases():
    assert krippendorff_alpha([]) is None
    assert krippendorff_alpha([("i1", "a", 3), ("i1", "b", 3)]) is None  # one value: nothing to agree on


def test_reliability_matrix_shape_and_duplicates():
    matrix = reliability_matrix([("i1", "a", 1), ("i2", "b", 2)])
    assert (matrix.raters, matrix.items) == (["a", "b"], ["i1", "i2"])
    assert matrix.values[0, 0] == 1 and np.isnan(matrix.values[0, 1]) and matrix.values[1, 1] == 2
    with pytest.raises(ValueError, match="more than once"):
        reliability_matrix([("i1", "a", 1), ("i1", "a", 2)])


def test_pairwise_weighted_kappa():
    ratings = [
        ("i1", "A", 1),
        ("i2", "A", 2),
        ("i3", "A", 3),
        ("i1", "B", 1),
        ("i2", "B", 2),
        ("i3", "B", 4),
        ("i1", "C", 5),  # C shares only one item with A and B
    ]
    kappas = pairwise_weighted_kappa(ratings, labels=[1, 2, 3, 4, 5])
    # A vs B, quadratic weights w = (i - j)^2 on the 1..5 scale:
    #   observed: only (3, 4) disagrees -> sum w*O = 1
    #   expected: E = row x col / 3 with rows {1, 2, 3}, cols {1, 2, 4}
    #     sum w*E = ((0+1+9) + (1+0+4) + (4+1+1)) / 3 = 21/3 = 7
    #   kappa = 1 - 1/7 = 6/7
    assert kappas[("A", "B")] == pytest.approx(6 / 7)
    assert kappas[("A", "C")] is None and kappas[("B", "C")] is None  # fewer than 2 shared items
    # default labels span the observed 1..5, so the result is the same
    assert pairwise_weighted_kappa(ratings)[("A", "B")] == pytest.approx(6 / 7)


def test_weighted_kappa_rejects_scores_outside_the_labels():
    with pytest.raises(ValueError, match="not among labels"):
        pairwise_weighted_kappa([("i1", "A", 6), ("i1", "B", 1)], labels=[1, 2, 3, 4, 5])


def test_weighted_kappa_is_none_when_both_raters_are_constant():
    ratings = [("i1", "A", 3), ("i2", "A", 3), ("i1", "B", 3), ("i2", "B", 3)]
    assert pairwise_weighted_kappa(ratings, labels=[1, 2, 3, 4, 5]) == {("A", "B"): None}


def test_disagreement_items_ranks_by_spread_then_std():
    ratings = [
        ("x", "a", 1),
        ("x", "b", 5),  # spread 4
        ("y", "a", 2),
        ("y", "b", 3),
        ("y", "c", 3),  # spread 1, std sqrt(2/9) = 0.471
        ("z", "a", 1),
        ("z", "b", 4),  # spread 3
        ("v", "a", 2),
        ("v", "b", 3),  # spread 1, std 0.5
        ("w", "a", 1),  # one rating: nothing to disagree on
    ]
    ranked = disagreement_items(ratings, top=10)
    assert [d.item_id for d in ranked] == ["x", "z", "v", "y"]
    assert ranked[0].spread == 4 and ranked[0].scores == {"a": 1.0, "b": 5.0}
    assert ranked[3].std == pytest.approx(math.sqrt(2 / 9))
    assert [d.item_id for d in disagreement_items(ratings, top=2)] == ["x", "z"]
