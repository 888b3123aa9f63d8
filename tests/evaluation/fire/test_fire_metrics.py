"""FIRE metrics: expected values are worked out by hand in the comments (or published, where cited)."""

import math
from decimal import Decimal
from fractions import Fraction

import krippendorff
import numpy as np
import pytest

from evaluation.exports.renderers.tables import render
from evaluation.fire.metrics import (
    bleu_scores,
    cider_d,
    cider_d_per_item,
    free_dialogue_metrics,
    mean_absolute_error,
    sacrebleu_corpus_bleu,
    satisfying_turn,
)
from evaluation.fire.rating_metrics import (
    bootstrap_mean_ci,
    cluster_bootstrap_mean_ci,
    disagreement_items,
    fire_rating_table,
    krippendorff_alpha,
    pairwise_weighted_kappa,
    reliability_matrix,
    summarize_ratings,
)

# --- free dialogue ----------------------------------------------------------------------------------

# Teacher scores per dialogue; threshold 8 (reached at >= 8), n_max 5, punishment p = 10.
# n_k is the first turn reaching 8 within 5 turns, else 10. A dialogue ends at turn n_k when solved, else it is
# cut at turn 5; ADR/ATR/RR are taken between its first turn and that end.
DIALOGUES = [
    [3, 9, 5],  # issue 23: first reach at turn 2 -> n=2; end turn 2: gain 9-3=6; per turn 6/1; RR 1-0=1
    [3, 8, 10],  # issue 23: exactly 8 reaches -> n=2; gain 5; per turn 5/1; RR 1
    [4, 6, 9],  # solved at the last turn -> n=3; gain 5; per turn 5/2; RR 1
    [9],  # solved at turn 1: removed
    [8, 5],  # solved at turn 1 (8 reaches) then worse: still removed (n_k = 1)
    [2, 3, 4, 5, 6, 7],  # never reaches 8; cut at turn 5 -> n=10; gain 6-2=4; per turn 4/4=1; RR 0
    [1, 2, 3, 4, 5, 9],  # reaches 8 only at turn 6 > n_max: cut at 5 -> n=10; gain 4; per turn 1; RR 0
    [2, 3, 4, 5, 8],  # solved at turn 5 = n_max -> n=5; gain 6; per turn 6/4=3/2; RR 1
    [6, 5],  # never reaches, got worse -> n=10; gain -1; per turn -1; RR 0
]


def test_free_dialogue_metrics_worked_example():
    metrics = free_dialogue_metrics(DIALOGUES)
    assert metrics.excluded_solved_at_first_turn == 2
    assert (metrics.dialogues, metrics.refinement_dialogues) == (7, 7)
    assert metrics.average_turn == 6  # (2 + 2 + 3 + 10 + 10 + 5 + 10) / 7 = 42 / 7
    assert metrics.average_dialogue_refinement == Fraction(29, 7)  # (6 + 5 + 5 + 4 + 4 + 6 - 1) / 7
    assert metrics.average_turn_refinement == Fraction(16, 7)  # (6 + 5 + 5/2 + 1 + 1 + 3/2 - 1) / 7
    assert metrics.refinement_ratio == Fraction(4, 7)  # (1 + 1 + 1 + 0 + 0 + 1 + 0) / 7


@pytest.mark.parametrize(
    ("scores", "turn"),
    [
        ([3, 9, 5], 2),  # issue 23 example: today 10
        ([3, 8, 10], 2),  # issue 23 example: today 3
        ([9], 1),  # solved at the first turn
        ([8], 1),  # exactly the threshold reaches it
        ([7.9, 7, 6], None),  # never solved
        ([1, 2, 3, 4, 8], 5),  # solved at turn n_max
        ([1, 2, 3, 4, 5, 8], None),  # solved after n_max: not within
        ([None, 9], 2),  # an unparseable score does not reach the threshold
        ([None, None], None),
    ],
)
def test_satisfying_turn(scores, turn):
    assert satisfying_turn(scores, threshold=8, n_max=5) == turn


def test_free_dialogue_metrics_issue_examples():
    assert free_dialogue_metrics([[3, 9, 5]]).average_turn == 2
    assert free_dialogue_metrics([[3, 8, 10]]).average_turn == 2
    # Removal is by n_k = 1, not by length 1: only [3, 8] is kept (n=2, gain 5, RR 1).
    metrics = free_dialogue_metrics([[3, 8], [8, 5], [9, 10]])
    assert (metrics.dialogues, metrics.excluded_solved_at_first_turn) == (1, 2)
    assert (metrics.average_turn, metrics.average_dialogue_refinement, metrics.refinement_ratio) == (2, 5, 1)


def test_free_dialogue_metrics_parameters():
    # AT relative to a baseline model whose AT is 3: 6 / 3 = 2
    assert free_dialogue_metrics(DIALOGUES, at_baseline=3).average_turn == 2
    # n_max 6: [2..7] is cut at 6 (n=10, gain 7-2=5, per turn 5/5); [1..5, 9] is solved at turn 6 (n=6, gain 8,
    # per turn 8/5, RR 1). AT = (2 + 2 + 3 + 10 + 6 + 5 + 10) / 7 = 38/7
    six = free_dialogue_metrics(DIALOGUES, n_max=6)
    assert six.average_turn == Fraction(38, 7)
    assert six.average_dialogue_refinement == Fraction(6 + 5 + 5 + 5 + 8 + 6 - 1, 7)
    assert six.refinement_ratio == Fraction(5, 7)
    # threshold 6: [6, 5] is now solved at turn 1 and removed; [4, 6, 9] n=2; [2..7] n=5 (6 at turn 5);
    # [1..5, 9] still n=10. AT = (2 + 2 + 2 + 5 + 10 + 5) / 6 = 13/3; RR = (1 + 1 + 1 + 1 + 0 + 1) / 6
    six_reaches = free_dialogue_metrics(DIALOGUES, threshold=6)
    assert six_reaches.excluded_solved_at_first_turn == 3
    assert six_reaches.average_turn == Fraction(13, 3)
    assert six_reaches.refinement_ratio == Fraction(5, 6)
    # punishment 20: (2 + 2 + 3 + 20 + 20 + 5 + 20) / 7 = 72/7
    assert free_dialogue_metrics(DIALOGUES, punishment=20).average_turn == Fraction(72, 7)


def test_free_dialogue_metrics_with_unparseable_scores():
    metrics = free_dialogue_metrics(
        [
            [3, None, 9],  # n=3; endpoints turn 1 (3) and turn 3 (9): gain 6 over 2 turns -> 3; RR 1
            [None, 4, 9],  # n=3; first scored turn is 2 (4): gain 5 over 1 turn -> 5; RR 1
            [4, 6, None],  # n=10; last scored turn is 2 (6): gain 2 over 1 turn -> 2; RR 0
            [None, 9],  # n=2; one scored turn: no refinement to measure, AT only
            [None] * 6,  # n=10; nothing scored: AT only
        ]
    )
    assert (metrics.dialogues, metrics.refinement_dialogues) == (5, 3)
    assert metrics.average_turn == Fraction(28, 5)  # (3 + 3 + 10 + 2 + 10) / 5
    assert metrics.average_dialogue_refinement == Fraction(13, 3)  # (6 + 5 + 2) / 3
    assert metrics.average_turn_refinement == Fraction(10, 3)  # (3 + 5 + 2) / 3
    assert metrics.refinement_ratio == Fraction(2, 3)  # (1 + 1 + 0) / 3


def test_free_dialogue_metrics_when_every_dialogue_is_solved_at_the_first_turn():
    metrics = free_dialogue_metrics([[9], [8, 3]])
    assert metrics.average_turn is None and metrics.refinement_ratio is None
    assert (metrics.dialogues, metrics.refinement_dialogues, metrics.excluded_solved_at_first_turn) == (0, 0, 2)


@pytest.mark.parametrize(
    ("dialogues", "kwargs", "message"),
    [
        ([[]], {}, "dialogue 0 has no turns"),
        ([[3, 9]], {"n_max": 0}, "n_max"),
        ([[3, 9]], {"at_baseline": 0}, "at_baseline"),
    ],
)
def test_free_dialogue_metrics_rejects_bad_input(dialogues, kwargs, message):
    with pytest.raises(ValueError, match=message):
        free_dialogue_metrics(dialogues, **kwargs)


# --- fixed dialogue: BLEU and CIDEr-D as pycocoevalcap computes them ----------------------------------


def test_bleu_of_an_identical_hypothesis_is_1():
    scores = bleu_scores(["the cat sat on the mat"], [["the cat sat on the mat"]])
    assert scores == pytest.approx({1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0})


def test_bleu_worked_example():
    scores = bleu_scores(["the cat the cat"], [["the cat sat on the mat"]])
    brevity_penalty = math.exp(1 - 6 / 4)  # hypothesis 4 tokens, reference 6
    # unigrams: "the" min(2, 2) + "cat" min(2, 1) = 3 of 4
    assert scores[1] == pytest.approx(3 / 4 * brevity_penalty)  # 0.4549
    # bigrams: "the cat" min(2, 1) = 1, "cat the" 0 -> 1 of 3; sqrt(3/4 * 1/3) = 1/2
    assert scores[2] == pytest.approx(0.5 * brevity_penalty)  # 0.3033
    # trigrams: "the cat the", "cat the cat": 0 of 2 -> 0 (pycocoevalcap's 1e-15 keeps it just above 0)
    assert scores[3] == pytest.approx(0.0, abs=1e-4) and scores[4] == pytest.approx(0.0, abs=1e-3)


def test_bleu_is_the_mean_of_sentence_scores_as_the_official_code_takes_it():
    # Item 1 is perfect (1.0 at every order); item 2 shares nothing (0). The official analyze_feedback.py averages
    # the per-sentence scores: (1 + 0) / 2 = 0.5. Corpus BLEU-1 would be 4 matches of 6 tokens = 0.667.
    scores = bleu_scores(["a b c d", "x y"], [["a b c d"], ["z w"]])
    assert scores == pytest.approx({1: 0.5, 2: 0.5, 3: 0.5, 4: 0.5}, abs=1e-6)


def test_bleu_takes_the_closest_reference_length():
    # References of 6 and 4 tokens; the hypothesis has 3, closest is 4: BP = exp(1 - 4/3); all unigrams match.
    scores = bleu_scores(["a b c"], [["a b c d e f", "a b c d"]])
    assert scores[1] == pytest.approx(math.exp(1 - 4 / 3))


def test_bleu_splits_raw_text_on_whitespace():
    # "The" != "the" and "cat." != "cat": no unigram matches, where a lowercasing tokenizer would give 1.0.
    assert bleu_scores(["The cat."], [["the cat"]])[1] == pytest.approx(0.0, abs=1e-6)


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


def test_cider_d_length_penalty():
    references = [["a b c d e"], ["v w x y z"]]
    # length is counted in bigrams (coco-caption): 2 vs 4 -> delta 2 -> penalty exp(-4 / 72)
    penalty = math.exp(-4 / (2 * 36))
    # n=1: hyp {a,b,c} each log2, ref {a..e} each log2 -> dot 3 log2^2 / (sqrt3 log2 * sqrt5 log2) = 3/sqrt15
    # n=2: 2 / (sqrt2 * sqrt4) = 1/sqrt2; n=3: 1 / (1 * sqrt3); n=4: hyp empty -> 0
    expected = 10 * penalty * (3 / math.sqrt(15) + 1 / math.sqrt(2) + 1 / math.sqrt(3)) / 4
    assert cider_d_per_item(["a b c", "v w x y z"], references)[0] == pytest.approx(expected)


def test_cider_d_keeps_case_and_punctuation():
    # Item 2 is identical to its reference and shares no n-gram with item 1: every idf is log 2, cosine 1 -> 10.
    # Item 1 "A man rides a horse." vs "a man rides a horse", all weights log 2 (L):
    #   n=1: hyp {A, man, rides, a, horse.} norm sqrt5 L; ref {a: 2L, man, rides, horse} norm sqrt7 L;
    #        clipped dot man + rides + min(L, 2L) * 2L = 4 L^2 -> 4 / sqrt35
    #   n=2: shared "man rides", "rides a" -> 2 / (2 * 2) = 1/2;  n=3: shared "man rides a" -> 1/3;  n=4: none
    #   same bigram length 4: no penalty -> 10 * (4/sqrt35 + 1/2 + 1/3) / 4 = 3.774
    # A lowercasing tokenizer that drops punctuation would give 10 for item 1.
    references = [["a man rides a horse"], ["two dogs play in snow"]]
    per_item = cider_d_per_item(["A man rides a horse.", "two dogs play in snow"], references)
    assert per_item == pytest.approx([10 * (4 / math.sqrt(35) + 1 / 2 + 1 / 3) / 4, 10.0])


def test_cider_d_of_a_one_item_corpus_is_0():
    # Document frequency comes from the corpus given: with one item every idf is log 1 - log 1 = 0.
    assert cider_d(["a b"], [["a b"]]) == 0.0


def test_text_metrics_of_an_empty_corpus_are_none():
    assert bleu_scores([], []) is None
    assert cider_d([], []) is None
    assert cider_d_per_item([], []) == []


@pytest.mark.parametrize(
    ("hypotheses", "references", "message"),
    [
        (["a"], [], "1 hypotheses but 0 reference lists"),
        (["a"], [[]], "hypothesis 0 has no reference"),
        (["a"], [[" "]], "every reference is empty"),
    ],
)
def test_text_metrics_reject_bad_input(hypotheses, references, message):
    with pytest.raises(ValueError, match=message):
        cider_d(hypotheses, references)
    if "empty" not in message:  # BLEU is defined for empty references
        with pytest.raises(ValueError, match=message):
            bleu_scores(hypotheses, references)


# --- fixed dialogue: sacrebleu, the extra column -------------------------------------------------------


def test_sacrebleu_of_an_identical_hypothesis_is_100():
    scores = sacrebleu_corpus_bleu(["the cat sat on the mat"], [["the cat sat on the mat"]])
    assert scores == pytest.approx({1: 100.0, 2: 100.0, 3: 100.0, 4: 100.0})


def test_sacrebleu_worked_example():
    scores = sacrebleu_corpus_bleu(["the cat the cat"], [["the cat sat on the mat"]], max_order=2)
    brevity_penalty = math.exp(1 - 6 / 4)
    assert scores[1] == pytest.approx(100 * 3 / 4 * brevity_penalty)  # 45.49
    assert scores[2] == pytest.approx(100 * 0.5 * brevity_penalty)  # 30.33


def test_sacrebleu_accepts_a_varying_number_of_references():
    scores = sacrebleu_corpus_bleu(["a b c d", "e f g h"], [["a b c d", "x y"], ["e f g h"]])
    assert scores[4] == pytest.approx(100.0)


# --- fixed dialogue: MAE of teacher scores -------------------------------------------------------------


def test_mean_absolute_error():
    # |8 - 10| + |5 - 5| + |3 - 2| = 3 over 3 pairs
    result = mean_absolute_error([8, 5, 3], [10, 5, 2])
    assert (result.value, result.pairs, result.unparseable, result.ignored) == (1, 3, 0, 0)
    assert mean_absolute_error([7.5], [8]).value == Fraction(1, 2)
    assert mean_absolute_error([], []).value is None


def test_mean_absolute_error_punishes_an_unparseable_score():
    # The error itself is the punishment, whatever the reference: |8 - 10| + 10 + |3 - 2| = 13 over 3
    result = mean_absolute_error([8, None, 3], [10, 10, 2])
    assert (result.value, result.unparseable) == (Fraction(13, 3), 1)
    assert mean_absolute_error([8, None, 3], [10, 10, 2], punishment=5).value == Fraction(8, 3)  # 2 + 5 + 1


def test_mean_absolute_error_compares_an_unparseable_reference_as_minus_one():
    # FIRE's code records -1 for a reference it cannot read: |7 - (-1)| = 8; a prediction that cannot be read
    # either is still an error of 10: (8 + 10 + 0) / 3 = 6
    result = mean_absolute_error([7, None, 4], [None, None, 4])
    assert (result.value, result.unparseable, result.unparseable_references) == (6, 1, 2)


def test_mean_absolute_error_skips_ignored_ids():
    # Pairs of conversation "a" are skipped, unparseable one included: only |3 - 2| = 1 remains
    result = mean_absolute_error([8, None, 3], [10, 5, 2], ids=["a", "a", "b"], ignored_ids={"a"})
    assert (result.value, result.pairs, result.unparseable, result.ignored) == (1, 1, 0, 2)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (([1], [1, 2]), {}, "1 predicted scores but 2 reference scores"),
        (([1, 2], [1, 2]), {"ids": ["a"]}, "2 scores but 1 ids"),
        (([1], [1]), {"ignored_ids": {"a"}}, "ignored_ids needs ids"),
    ],
)
def test_mean_absolute_error_rejects_bad_input(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        mean_absolute_error(*args, **kwargs)


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


def test_cluster_bootstrap_resamples_whole_clusters():
    # Clusters "a" (1, 1, 1) and "b" (5, 5, 5): a resample is aa, ab/ba or bb (1/4, 1/2, 1/4), so the 95%
    # percentile interval is [1, 5]; resampling the six ratings would give [10/6, 26/6].
    ci = cluster_bootstrap_mean_ci([1, 1, 1, 5, 5, 5], ["a", "a", "a", "b", "b", "b"], seed=2)
    assert (ci.low, ci.high) == (1.0, 5.0)
    ratings = bootstrap_mean_ci([1, 1, 1, 5, 5, 5], seed=2)
    assert (round(ratings.low, 2), round(ratings.high, 2)) == (1.67, 4.33)
    # One cluster: every resample is that cluster; its mean is the interval. Unequal sizes pool the ratings.
    single = cluster_bootstrap_mean_ci([2, 4], ["a", "a"])
    assert (single.low, single.high) == (3.0, 3.0)
    uneven = cluster_bootstrap_mean_ci([1, 5, 5, 5], ["a", "b", "b", "b"], seed=0)
    assert uneven.low == 1.0 and uneven.high == 5.0  # aa and bb each 1/4 of the resamples
    assert cluster_bootstrap_mean_ci([], []) is None
    with pytest.raises(ValueError, match="2 scores but 1 clusters"):
        cluster_bootstrap_mean_ci([1, 2], ["a"])


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
