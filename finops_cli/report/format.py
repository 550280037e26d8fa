"""Plain-text number formatting shared by the markdown report, the gate and the CLI tables (no rich here).

``money(1234.5, "USD") -> "$1,234.50"``; ``pct(0.125) -> "12.5%"`` (takes a fraction);
``number(12345.6) -> "12,346"``; ``unit_price(0.0004) -> "$0.0004"``. ``None``/NaN render as ``—``.
"""

from __future__ import annotations

import math

_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "CAD": "CA$", "AUD": "A$"}


def currency_symbol(currency: str) -> str | None:
    """``$`` for USD, ``€`` for EUR, …; None for a currency written as its code after the amount."""
    return _SYMBOLS.get(currency.upper())


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def money(value: float | None, currency: str = "USD", *, signed: bool = False, decimals: int = 2) -> str:
    """Format an amount of money: ``$1,234.50``, ``-$20.00``, ``1,234.50 CHF``; ``—`` for None/NaN.

    ``signed=True`` puts ``+`` on positive amounts (for deltas).
    """
    if _missing(value):
        return "—"
    amount = round(float(value), decimals)  # type: ignore[arg-type]
    if amount == 0:
        amount = 0.0  # no "-$0.00"
    sign = "-" if amount < 0 else ("+" if signed and amount > 0 else "")
    body = f"{abs(amount):,.{decimals}f}"
    symbol = currency_symbol(currency)
    return f"{sign}{symbol}{body}" if symbol else f"{sign}{body} {currency.upper()}"


def unit_price(value: float | None, currency: str = "USD") -> str:
    """A price per GPU-hour or per unit of output: 4 decimals below 1 (per-token prices are fractions of a
    cent), else 2: ``$0.0004``, ``$3.90``."""
    return money(value, currency, decimals=4 if value is not None and abs(value) < 1 else 2)


def pct(fraction: float | None, *, signed: bool = False, decimals: int = 1) -> str:
    """Format a fraction as a percentage: ``0.125`` → ``12.5%``; ``—`` for None/NaN."""
    if _missing(fraction):
        return "—"
    value = round(float(fraction) * 100, decimals)  # type: ignore[arg-type]
    if value == 0:
        value = 0.0
    return f"{value:+.{decimals}f}%" if signed else f"{value:.{decimals}f}%"


def number(value: float | None, decimals: int = 0) -> str:
    """Format a quantity (GPU-hours, units) with thousands separators; ``—`` for None/NaN."""
    if _missing(value):
        return "—"
    return f"{float(value):,.{decimals}f}"  # type: ignore[arg-type]


def compact_money(value: float | None, currency: str = "USD") -> str:
    """Short money for prose and chart labels: ``$1.23M``, ``$45.6k``, ``$980``."""
    if _missing(value):
        return "—"
    amount = float(value)  # type: ignore[arg-type]
    sign = "-" if amount < 0 else ""
    a = abs(amount)
    symbol = currency_symbol(currency)
    for bound, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if a >= bound:
            body = f"{a / bound:.3g}{suffix}"
            break
    else:
        body = f"{a:,.0f}"
    return f"{sign}{symbol}{body}" if symbol else f"{sign}{body} {currency.upper()}"
