"""The one rounding rule for figures finops prints or records: a figure derived from others is derived from their
*rounded* values, so numbers side by side never disagree (a saving of 0.00 is 0.0 %, never 0.0009 %), and a
quantity that is not zero is never shown as zero (0.04 at one decimal is ``0.04``).
"""

from __future__ import annotations

import math

#: Money in plan.json is rounded to cents (the report formats it per currency)
MONEY_DECIMALS = 2


def round_money(value: float, decimals: int = MONEY_DECIMALS) -> float:
    """``value`` rounded to ``decimals`` (cents by default), with no negative zero."""
    out = round(float(value), decimals)
    return 0.0 if out == 0 else out


def percent_of(part: float, whole: float, decimals: int = 4, money_decimals: int = MONEY_DECIMALS) -> float | None:
    """``100 · part / whole`` from the amounts as they are shown (each rounded with :func:`round_money`), rounded to
    ``decimals``; None when the whole rounds to 0."""
    p, w = round_money(part, money_decimals), round_money(whole, money_decimals)
    if w == 0:
        return None
    return round_money(100.0 * p / w, decimals)


def quantity_decimals(value: float, decimals: int = 1) -> int:
    """Decimals to show ``value`` with: ``decimals``, or down to its first significant digit for a non-zero that
    would show as 0."""
    x = float(value)
    if x == 0 or not math.isfinite(x) or round(x, decimals) != 0:
        return decimals
    return max(decimals, -math.floor(math.log10(abs(x))))
