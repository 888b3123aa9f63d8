"""InterFeedback metrics: every expected value below is computed by hand in the comment beside it."""

import csv
import io
from decimal import Decimal
from fractions import Fraction

import pytest

from evaluation.exports.renderers.tables import render
from evaluation.interfeedback.metrics import (
    BenchTaskRecord,
    OutcomeCounts,
    accuracy,
    accuracy_ci,
    accuracy_table,
    bench_summaries,
    bench_table,
    correction_rate,
    correction_rate_ci,
    correction_rate_table,
    counts_from_outcomes,
    pool,
)
from evaluation.stats import percent, round_half_up


@pytest.mark.parametrize(
    ("value", "digits", "expected"),
    [
        (Fraction(17, 80), 1, "21.3"),  # 21.25 -> tie -> up
        (Fraction(1, 8), 1, "12.5"),  # exactly 12.5
        (Fraction(1, 16), 1, "6.3"),  # 6.25 -> tie -> up (banker's rounding would give 6.2)
        (Fraction(3, 16), 1, "18.8"),  # 18.75 -> up
        (Fraction(1, 3), 1, "33.3"),  # 33.33...
        (Fraction(2, 3), 1, "66.7"),  # 66.66...
        (Fraction(1, 8), 0, "13"),  # 12.5 -> 13
        (Fraction(0), 1, "0.0"),
        (Fraction(1), 1, "100.0"),
        (Decimal("0.21250"), 1, "21.3"),
        (0.2125, 1, "21.3"),  # the float is read as the decimal it prints as
    ],
)
def test_percent_rounds_half_up_in_exact_arithmetic(value, digits, expected):
    result = percent(value, digits)
    assert isinstance(result, Decimal)
    assert str(result) == expected


def test_percent_of_undefined_is_undefined():
    assert percent(None) is None


@pytest.mark.parametrize(
    ("value", "digits", "expected"),
    [
        (Fraction(-25, 4), 1, "-6.3"),  # -6.25: ties go away from zero
        (2.675, 2, "2.68"),  # binary 2.67499999... but printed 2.675; Python's round() gives 2.67
        (Fraction(5, 2), 0, "3"),
    ],
)
def test_round_half_up(value, digits, expected):
    assert str(round_half_up(value, digits)) == expected


def test_counts_from_outcomes_groups_by_model_and_category():
    outcomes = [
        ("gpt-4o", "Visual Logic", 0),
        ("gpt-4o", "Visual Logic", 2),
        ("gpt-4o", "Visual Logic", None),
        ("gpt-4o", "MMMU-Pro", 3),
        ("claude", "Visual Logic", 1),
    ]
    counts = counts_from_outcomes(outcomes)
    assert list(counts) == [("gpt-4o", "Visual Logic"), ("gpt-4o", "MMMU-Pro"), ("claude", "Visual Logic")]
    assert counts[("gpt-4o", "Visual Logic")] == OutcomeCounts(3, (1, 0, 1, 0))
    assert counts[("gpt-4o", "Visual Logic")].never == 1  # 3 - (1 + 0 + 1 + 0)
    assert counts[("gpt-4o", "MMMU-Pro")] == OutcomeCounts(1, (0, 0, 0, 1))
    assert counts[("claude", "Visual Logic")] == OutcomeCounts(1, (0, 1, 0, 0))


@pytest.mark.parametrize("bad_round", [4, -1, "1"])
def test_counts_reject_rounds_outside_0_to_3(bad_round):
    with pytest.raises(ValueError):
        counts_from_outcomes([("m", "c", bad_round)])


def test_counts_reject_more_corrected_than_sessions():
    with pytest.raises(ValueError):
        OutcomeCounts(2, (1, 1, 1, 0))


def test_counts_add_and_pool():
    a = OutcomeCounts(10, (2, 3, 1, 0))
    b = OutcomeCounts(5, (1, 0, 0, 2))
    assert a + b == OutcomeCounts(15, (3, 3, 1, 2))
    assert pool([a, b]) == a + b
    assert pool([]) == OutcomeCounts()


@pytest.mark.parametrize(
    ("counts", "expected_accuracy", "expected_rates"),
    [
        # 80 sessions, 17 right at once -> 17/80; 63 wrong at round 0 -> 21/63, 10/63, 5/63
        (
            OutcomeCounts(80, (17, 21, 10, 5)),
            Fraction(17, 80),
            (Fraction(1, 3), Fraction(10, 63), Fraction(5, 63)),
        ),
        # everything right at round 0: nobody wrong, so every correction rate is undefined
        (OutcomeCounts(4, (4, 0, 0, 0)), Fraction(1), (None, None, None)),
        # no sessions at all: everything undefined
        (OutcomeCounts(0, (0, 0, 0, 0)), None, (None, None, None)),
        # nothing ever corrected: rates are 0, not undefined
        (OutcomeCounts(3, (0, 0, 0, 0)), Fraction(0), (Fraction(0), Fraction(0), Fraction(0))),
    ],
)
def test_accuracy_and_correction_rates(counts, expected_accuracy, expected_rates):
    assert accuracy(counts) == expected_accuracy
    assert tuple(correction_rate(counts, k) for k in (1, 2, 3)) == expected_rates


def test_correction_rate_of_round_zero_is_an_error():
    with pytest.raises(ValueError):
        correction_rate(OutcomeCounts(1, (0, 0, 0, 0)), 0)


def test_average_is_pooled_over_sessions_not_the_mean_of_columns():
    counts = {
        ("m", "Visual Logic"): OutcomeCounts(1, (1, 0, 0, 0)),  # 1/1 = 100.0
        ("m", "MMMU-Pro"): OutcomeCounts(9, (0, 0, 0, 0)),  # 0/9 = 0.0
    }
    table = accuracy_table(counts)
    assert table.columns == ["Model", "Visual Logic", "MMMU-Pro", "Average"]
    # pooled: (1 + 0) / (1 + 9) = 10.0, whereas the mean of the columns would be 50.0
    assert table.rows == [["m", Decimal("100.0"), Decimal("0.0"), Decimal("10.0")]]


# Per-category numbers as a paper would report them (sessions, corrected in rounds 0..3).
PAPER_COUNTS = {
    ("Model-A", "Visual Logic"): OutcomeCounts(80, (17, 21, 10, 5)),
    ("Model-A", "Math (Text)"): OutcomeCounts(16, (1, 3, 0, 6)),
    ("Model-B", "Visual Logic"): OutcomeCounts(8, (8, 0, 0, 0)),
    # Model-B has no Math (Text) sessions.
}


def _markdown_cells(markdown: str) -> list[list[str]]:
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def _csv_values_and_counts(text: str) -> tuple[list[str], list[str]]:
    """CSV lines with only the value columns (as in md), and the (k)/(n) columns beside them apart."""
    rows = list(csv.reader(io.StringIO(text)))
    keep = [i for i, column in enumerate(rows[0]) if not column.endswith((" (k)", " (n)"))]
    counted = [i for i, column in enumerate(rows[0]) if column.endswith((" (k)", " (n)"))]
    return ([",".join(row[i] for i in keep) for row in rows], [",".join(row[i] for i in counted) for row in rows])


def test_accuracy_table_markdown_and_csv_cell_by_cell():
    table = accuracy_table(PAPER_COUNTS, categories=["Visual Logic", "Math (Text)"])
    expected = [
        ["Model", "Visual Logic", "Math (Text)", "Average"],
        # A: 17/80 = 21.25 -> 21.3; 1/16 = 6.25 -> 6.3; pooled 18/96 = 18.75 -> 18.8
        #    (the mean of the two columns would be 13.75)
        ["Model-A", "21.3", "6.3", "18.8"],
        # B: 8/8 = 100.0; no Math sessions -> "-"; pooled 8/8
        ["Model-B", "100.0", "-", "100.0"],
    ]
    cells = _markdown_cells(render(table, "md"))
    assert cells[0] == expected[0]
    assert cells[1] == ["---", "---:", "---:", "---:"]
    assert cells[2:] == expected[1:]
    # CSV leaves an undefined cell empty, and has the sessions behind each value beside it (k right of n).
    values, counts = _csv_values_and_counts(render(table, "csv"))
    assert values == [",".join("" if c == "-" else c for c in row) for row in expected]
    assert counts == ["Visual Logic (k),Visual Logic (n),Math (Text) (k),Math (Text) (n),Average (k),Average (n)",
                      "17,80,1,16,18,96", "8,8,0,0,8,8"]


def test_correction_rate_table_markdown_and_csv_cell_by_cell():
    table = correction_rate_table(PAPER_COUNTS)
    expected = [
        ["Model", "# Round", "Visual Logic", "Math (Text)", "Average"],
        # A, Visual Logic: 80 - 17 = 63 wrong -> 21/63 = 33.33, 10/63 = 15.87, 5/63 = 7.94
        # A, Math (Text):  16 - 1 = 15 wrong  -> 3/15 = 20.0, 0/15 = 0.0, 6/15 = 40.0
        # A, pooled: 96 - 18 = 78 wrong -> 24/78 = 30.77, 10/78 = 12.82, 11/78 = 14.10
        ["Model-A", "1", "33.3", "20.0", "30.8"],
        ["Model-A", "2", "15.9", "0.0", "12.8"],
        ["Model-A", "3", "7.9", "40.0", "14.1"],
        # B: never wrong at round 0 -> undefined; no Math sessions -> undefined
        ["Model-B", "1", "-", "-", "-"],
        ["Model-B", "2", "-", "-", "-"],
        ["Model-B", "3", "-", "-", "-"],
    ]
    # Markdown names each model once per group of rounds (the paper's layout); CSV keeps it on every row.
    cells = _markdown_cells(render(table, "md"))
    grouped = [[row[0] if index % 3 == 0 else "", *row[1:]] for index, row in enumerate(expected[1:])]
    assert [cells[0], *cells[2:]] == [expected[0], *grouped]
    # CSV leaves an undefined cell empty, and has beside each value k corrected in that round of n wrong in round 0.
    values, counts = _csv_values_and_counts(render(table, "csv"))
    assert values == [",".join("" if c == "-" else c for c in row) for row in expected]
    assert counts[1:] == ["21,63,3,15,24,78", "10,63,0,15,10,78", "5,63,6,15,11,78",
                          "0,0,0,0,0,0", "0,0,0,0,0,0", "0,0,0,0,0,0"]


def test_tables_follow_the_requested_model_and_category_order():
    table = accuracy_table(PAPER_COUNTS, models=["Model-B", "Model-A"], categories=["Math (Text)"])
    # Average pools only the categories shown: B has none -> "-"; A is 1/16 -> 6.3
    assert table.rows == [["Model-B", None, None], ["Model-A", Decimal("6.3"), Decimal("6.3")]]


def test_bootstrap_ci_is_seeded_and_contains_the_point_estimate():
    counts = OutcomeCounts(80, (17, 21, 10, 5))
    first = accuracy_ci(counts, seed=7)
    assert first == accuracy_ci(counts, seed=7)
    assert float(accuracy(counts)) in first  # 0.2125
    assert 0 <= first.low < first.high <= 1
    rate = correction_rate_ci(counts, 1, seed=7)
    assert rate == correction_rate_ci(counts, 1, seed=7)
    assert float(correction_rate(counts, 1)) in rate  # 1/3


def test_bootstrap_ci_edge_cases():
    assert accuracy_ci(OutcomeCounts()) is None
    assert correction_rate_ci(OutcomeCounts(5, (5, 0, 0, 0)), 1) is None  # nobody wrong
    everyone_right = accuracy_ci(OutcomeCounts(5, (5, 0, 0, 0)))
    assert (everyone_right.low, everyone_right.high) == (1.0, 1.0)


def _bench_records() -> list[BenchTaskRecord]:
    r = BenchTaskRecord
    return [
        # receiver R, provider P over 6 tasks
        r("R", "P", "t1", receiver_correct=True, provider_correct=True),
        r("R", "P", "t2", receiver_correct=True, provider_correct=False),
        r("R", "P", "t3", receiver_correct=False, provider_correct=True, corrected_with_detail=True),
        r("R", "P", "t4", receiver_correct=False, provider_correct=True, corrected_with_simple=True),
        r(
            "R",
            "P",
            "t5",
            receiver_correct=False,
            provider_correct=True,
            corrected_with_detail=True,
            corrected_with_simple=True,
        ),
        # wrong for both: not in the test set, so its correction does not count
        r("R", "P", "t6", receiver_correct=False, provider_correct=False, corrected_with_detail=True),
        # a provider that solves nothing the receiver missed: empty test set
        r("R", "Q", "t1", receiver_correct=False, provider_correct=False),
    ]


def test_bench_summaries_and_table():
    summaries = bench_summaries(_bench_records())
    rp = summaries[("R", "P")]
    # Acc = 2/6; #Neg = 4 (t3..t6); #Test = 3 (t3, t4, t5); Detail = 2/3 (t3, t5); Simple = 2/3 (t4, t5)
    assert (rp.tasks, rp.negatives, rp.test) == (6, 4, 3)
    assert (rp.accuracy, rp.detail_rate, rp.simple_rate) == (Fraction(1, 3), Fraction(2, 3), Fraction(2, 3))
    table = bench_table(_bench_records())
    assert table.columns == ["Receiver", "Provider", "Acc (%)", "#Neg", "#Test", "Detail (%)", "Simple (%)"]
    assert render(table, "csv").splitlines()[1:] == [
        "R,P,33.3,4,3,66.7,66.7",  # 1/3 -> 33.3; 2/3 -> 66.7
        "R,Q,0.0,1,0,,",  # empty test set -> undefined rates (empty in CSV)
    ]


def test_bench_rejects_duplicate_tasks():
    record = BenchTaskRecord("R", "P", "t1", receiver_correct=True, provider_correct=True)
    with pytest.raises(ValueError, match="t1"):
        bench_summaries([record, record])
