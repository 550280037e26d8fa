"""Plain-text number formatting shared by the markdown report, the gate and the CLI tables (no rich here):
money in the currency's ISO 4217 minor units, percentages of fractions, quantities; ``None``/NaN render as ``—``.
"""

from __future__ import annotations

import math

from finops_cli.schema.currency import minor_units

_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "CAD": "CA$", "AUD": "A$"}


def _code(currency: str) -> str:
    """The code printed after an amount. Boundaries admit ISO 4217 codes only; anything else reaching here
    (a library caller) is shown as ``???`` rather than printed raw into markdown or a terminal."""
    code = str(currency).upper()
    return code if len(code) == 3 and code.isascii() and code.isalpha() else "???"


def currency_symbol(currency: str) -> str | None:
    """``$`` for USD, ``€`` for EUR, …; None for a currency written as its code after the amount."""
    return _SYMBOLS.get(currency.upper())


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def money(value: float | None, currency: str = "USD", *, signed: bool = False, decimals: int | None = None) -> str:
    """Format an amount of money: ``$1,234.50``, ``-$20.00``, ``¥1,235``, ``1,234.500 KWD``; ``—`` for None/NaN.

    ``decimals`` defaults to the currency's ISO 4217 minor units. ``signed=True`` puts ``+`` on positive
    amounts (for deltas).
    """
    if _missing(value):
        return "—"
    decimals = minor_units(currency) if decimals is None else decimals
    amount = round(float(value), decimals)  # type: ignore[arg-type]
    if amount == 0:
        amount = 0.0  # no "-$0.00"
    sign = "-" if amount < 0 else ("+" if signed and amount > 0 else "")
    return _with_symbol(sign, f"{abs(amount):,.{decimals}f}", currency)


def _with_symbol(sign: str, body: str, currency: str) -> str:
    symbol = currency_symbol(currency)
    return f"{sign}{symbol}{body}" if symbol else f"{sign}{body} {_code(currency)}"


def unit_price(value: float | None, currency: str = "USD") -> str:
    """A price per GPU-hour or per unit of output: at least 4 decimals below 1 (per-token prices are
    fractions of a cent), else the currency's minor units: ``$0.0004``, ``$3.90``, ``¥590``."""
    small = value is not None and not _missing(value) and abs(value) < 1
    return money(value, currency, decimals=max(4, minor_units(currency)) if small else None)


def pct(fraction: float | None, *, signed: bool = False, decimals: int = 1) -> str:
    """Format a fraction as a percentage: ``0.125`` → ``12.5%``; ``—`` for None/NaN."""
    if _missing(fraction):
        return "—"
    value = round(float(fraction) * 100, decimals)  # type: ignore[arg-type]
    if value == 0:
        value = 0.0
    return f"{value:+.{decimals}f}%" if signed else f"{value:.{decimals}f}%"


def number(value: float | None, decimals: int = 0) -> str:
    """Format a quantity (GPU-hours, units) with thousands separators; ``—`` for None/NaN. A non-zero quantity is
    never shown as zero: ``number(0.04, 1) -> "0.04"`` (:func:`finops_cli.core.rounding.quantity_decimals`)."""
    if _missing(value):
        return "—"
    from finops_cli.core.rounding import quantity_decimals

    x = float(value)  # type: ignore[arg-type]
    return f"{x:,.{quantity_decimals(x, decimals) if math.isfinite(x) else decimals}f}"


#: Compact suffixes, largest first: each step is 1000× the next.
_COMPACT = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"))


def compact_money(value: float | None, currency: str = "USD") -> str:
    """Short money for prose and chart labels, three significant digits: ``$1.23M``, ``$45.6k``, ``$980``.

    The suffix is chosen *after* rounding, so ``999_999`` is ``$1M`` (never ``$1e+03k``) and ``999.6`` is
    ``$1k``. Below 1,000 the amount is whole units, except below 10 where the currency's minor units show
    (``$4.50``, ``¥4``). Above 999T the mantissa keeps growing with separators (``$1,234T``).
    """
    if _missing(value):
        return "—"
    amount = float(value)  # type: ignore[arg-type]
    if math.isinf(amount):
        return f"{'-' if amount < 0 else ''}∞ {_code(currency)}"
    a = abs(amount)
    unit = next((i for i, (bound, _) in enumerate(_COMPACT) if a >= bound), None)
    if unit is None:
        decimals = minor_units(currency) if a < 10 else 0
        body = f"{a:,.{decimals}f}"
        if body == "1,000":  # 999.5 rounds to a thousand: say so in the compact form
            body = "1k"
    else:
        bound, suffix = _COMPACT[unit]
        mantissa = float(f"{a / bound:.3g}")
        if mantissa >= 1000 and unit > 0:  # rounding reached the next unit up: 999.9995k is 1M
            bound, suffix = _COMPACT[unit - 1]
            mantissa = float(f"{a / bound:.3g}")
        body = (f"{mantissa:,.0f}" if mantissa >= 1000 else f"{mantissa:g}") + suffix
    nonzero = any(ch in "123456789" for ch in body)
    return _with_symbol("-" if amount < 0 and nonzero else "", body, currency)
