"""Numbers every report shares, over plain data (no ORM): exact rounding half up for display, and percentile
bootstrap intervals.

Rates stay exact `Fraction`s until they are shown; `percent` turns one into a `Decimal` rounded half up, so
17/80 prints as 21.3 and 1/16 as 6.3 (Python's round() would print 6.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np


def exact_fraction(value: Fraction | Decimal | int | float) -> Fraction:
    # A float is taken as the decimal it prints as (2.675 -> 2675/1000), not its binary expansion.
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


def round_half_up(value: Fraction | Decimal | int | float, digits: int = 1) -> Decimal:
    """Round to `digits` decimals, ties away from zero, in exact arithmetic."""
    exact = exact_fraction(value)
    sign = -1 if exact < 0 else 1
    scaled = abs(exact) * 10**digits
    rounded = int(scaled + Fraction(1, 2))  # floor(x + 1/2) for x >= 0 is half up
    return Decimal(sign * rounded).scaleb(-digits)


def percent(value: Fraction | Decimal | int | float | None, digits: int = 1) -> Decimal | None:
    """A share as a percentage rounded half up (17/80 -> 21.3); None (undefined) stays None."""
    if value is None:
        return None
    return round_half_up(exact_fraction(value) * 100, digits)


@dataclass(frozen=True)
class ConfidenceInterval:
    low: float
    high: float
    confidence: float = 0.95

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int | float | Fraction | Decimal) and self.low <= value <= self.high


def percentile_interval(samples: np.ndarray, confidence: float = 0.95) -> ConfidenceInterval | None:
    """Percentile bootstrap interval of the defined (non-NaN) resampled statistics."""
    defined = samples[~np.isnan(samples)]
    if defined.size == 0:
        return None
    tail = (1 - confidence) / 2
    low, high = np.quantile(defined, [tail, 1 - tail])
    return ConfidenceInterval(float(low), float(high), confidence)
