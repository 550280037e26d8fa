"""The one rounding rule for figures finops prints or records (issue 26 item 7d).

A figure is rounded once, and a figure derived from others is derived from their *rounded* values, so that two
numbers shown side by side never disagree: a saving of 0.00 is 0.0 %, never 0.0009 % (:func:`percent_of`). A
quantity that is not zero is never shown as zero: 0.04 GPU-hours per hour at one decimal is ``0.04``, not ``0.0``
(:func:`round_quantity`).
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


def round_quantity(value: float, decimals: int = 1) -> float:
    """``value`` at ``decimals``, or at its first significant digit when that would show a non-zero as 0."""
    x = float(value)
    out = round(x, decimals)
    if out == 0 and x != 0 and math.isfinite(x):
        out = round(x, -math.floor(math.log10(abs(x))))
    return 0.0 if out == 0 else out


def quantity_decimals(value: float, decimals: int = 1) -> int:
    """How many decimals :func:`round_quantity` keeps for ``value`` (for formatting with separators)."""
    x = float(value)
    if x == 0 or not math.isfinite(x) or round(x, decimals) != 0:
        return decimals
    return max(decimals, -math.floor(math.log10(abs(x))))
