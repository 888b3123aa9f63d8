"""The same judgments give the same report whatever order the records came in and whatever the models are called:
the study imported in file order, in reverse, and with its models renamed so that every pair's A and B swap."""

from __future__ import annotations

from decimal import Decimal

import pytest

from evaluation.preference.reports import preference_report
from tests.evaluation.preference.study import RECORDS, import_study, rate, raters

pytestmark = pytest.mark.django_db

RENAMED = {"alpha": "zeta", "beta": "eta", "gamma": "theta"}  # name order alpha < beta < gamma becomes eta < theta < zeta
BACK = {new: old for old, new in RENAMED.items()}


def _rename(record: dict) -> dict:
    return {**record, "models": [RENAMED[m] for m in record["models"]]}


def _win_rates(report, back=lambda name: name) -> dict[tuple[str, str], tuple]:
    """(model, other model) -> (judgments, wins, ties, losses, win rate, CI low, CI high) of the first over the second,
    both orientations, names mapped back."""
    rates = {}
    for a, b, items, n, wins, ties, losses, rate_, low, high in report.pairs.rows:
        a, b = back(a), back(b)
        rates[(a, b)] = (items, n, wins, ties, losses, rate_, low, high)
        rates[(b, a)] = (items, n, losses, ties, wins, Decimal(100) - rate_, Decimal(100) - high, Decimal(100) - low)
    return rates


def _close(first: dict, second: dict) -> None:
    """Counts and win rates equal; CI bounds equal to the printed 0.1 (a bound of B is 100 minus A's, in floats)."""
    assert first.keys() == second.keys()
    for key in first:
        assert first[key][:6] == second[key][:6], key
        assert all(abs(x - y) <= Decimal("0.1") for x, y in zip(first[key][6:], second[key][6:], strict=True)), key


def test_report_does_not_depend_on_record_order_or_model_names(tmp_path):
    people = raters()
    forward = import_study(tmp_path, name="forward")
    backward = import_study(tmp_path, records=RECORDS[::-1], name="backward")
    renamed = import_study(tmp_path, records=[_rename(r) for r in RECORDS], name="renamed")
    for batch in (forward, backward, renamed):
        rate(batch, people)
    reports = [preference_report(batch) for batch in (forward, backward, renamed)]

    # Agreement and kappa: the same rows, cell for cell (raters are the same people).
    assert reports[0].agreement.rows == reports[1].agreement.rows == reports[2].agreement.rows
    assert reports[0].kappa.rows == reports[1].kappa.rows == reports[2].kappa.rows
    assert reports[0].agreement.rows[0][4] is not None  # alpha is defined here
    # Win rates: each model's over each other, the same (renamed models mapped back).
    assert reports[0].pairs.rows == reports[1].pairs.rows
    _close(_win_rates(reports[0]), _win_rates(reports[2], BACK.__getitem__))
    # Scores per model: the same means and item-resampled CIs.
    by_model = [{BACK.get(row[0], row[0]): row[1:] for row in report.scores.rows} for report in reports]
    assert by_model[0] == by_model[1] == by_model[2]


def test_pairs_are_oriented_by_model_name(tmp_path):
    batch = import_study(tmp_path, records=RECORDS[::-1], name="gamma-first")  # the file shows gamma first
    rate(batch, raters())
    assert [row[:2] for row in preference_report(batch).pairs.rows] == [
        ["alpha", "beta"], ["alpha", "gamma"], ["beta", "gamma"]]
