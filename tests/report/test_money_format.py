"""Money formatting: ISO 4217 minor units for every currency, and compact forms right at every magnitude."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from finops_cli.report.format import compact_money, money, unit_price
from finops_cli.schema.currency import is_iso4217, iso4217_minor_units, minor_units

_SYMBOL = r"(?:\$|€|£|¥|CA\$|A\$)"
_COMPACT = re.compile(rf"(?P<sign>-?){_SYMBOL}?(?P<num>[\d,]+(?:\.\d+)?)(?P<suffix>[kMBT]?)(?: (?P<code>[A-Z]{{3}}))?")
_SCALE = {"": 1.0, "k": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (999_999, "$1M"),
        (999_499, "$999k"),
        (999.6, "$1k"),
        (999.4, "$999"),
        (1_234, "$1.23k"),
        (45_600, "$45.6k"),
        (1_230_000, "$1.23M"),
        (999_999_999, "$1B"),
        (999_999_999_999, "$1T"),
        (4.5, "$4.50"),
        (-999_999, "-$1M"),
        (-0.001, "$0.00"),
    ],
)
def test_compact_money_known_values(value: float, expected: str) -> None:
    assert compact_money(value) == expected


def test_minor_units_follow_iso_4217() -> None:
    assert (minor_units("USD"), minor_units("JPY"), minor_units("KWD"), minor_units("BHD")) == (2, 0, 3, 3)
    assert (minor_units("CLF"), minor_units("ISK"), minor_units("EUR")) == (4, 0, 2)
    assert money(1234.6, "JPY") == "¥1,235"
    assert money(1.5, "KWD") == "1.500 KWD"
    assert money(-2, "CLF") == "-2.0000 CLF"
    assert unit_price(590.4, "JPY") == "¥590" and unit_price(0.0004, "JPY") == "¥0.0004"
    assert is_iso4217("USD") and not is_iso4217("usd") and not is_iso4217("XYZ")


def test_every_currency_prints_its_own_minor_units() -> None:
    table = iso4217_minor_units()
    assert len(table) > 150
    for code, units in table.items():
        decimals = 2 if units is None else units
        text = money(1.0, code)
        body = text.split(" ")[0].lstrip("$€£¥CA")
        assert body == ("1" if decimals == 0 else "1." + "0" * decimals), (code, text)


def _parse(text: str) -> tuple[float, str, str]:
    m = _COMPACT.fullmatch(text)
    assert m is not None, text
    mantissa = float(m["num"].replace(",", ""))
    return (-1 if m["sign"] else 1) * mantissa * _SCALE[m["suffix"]], m["suffix"], m["num"]


@given(
    st.floats(min_value=-1e17, max_value=1e17, allow_nan=False, allow_infinity=False),
    st.sampled_from(["USD", "JPY", "KWD", "CHF", "EUR"]),
)
def test_compact_money_is_right_at_every_magnitude(value: float, currency: str) -> None:
    text = compact_money(value, currency)
    assert "e+" not in text and "e-" not in text, text
    back, suffix, num = _parse(text)
    a = abs(value)
    mantissa = float(num.replace(",", ""))
    if suffix:
        assert mantissa >= 1 and (mantissa < 1000 or suffix == "T"), text  # never "1e+03k" nor "1,000k"
        assert len(num.replace(",", "").replace(".", "").lstrip("0")) <= 3 or suffix == "T", text
        assert math.isclose(abs(back), a, rel_tol=5e-3), (value, text)
    else:
        assert mantissa < 1000, text
        tolerance = 0.5 * 10 ** -minor_units(currency) if a < 10 else 0.5
        assert abs(abs(back) - a) <= tolerance + 1e-9, (value, text)
    if back == 0:
        assert not text.startswith("-"), text
    else:
        assert text.startswith("-") == (value < 0), text


def test_chart_axes_use_minor_units_too() -> None:
    from finops_cli.report.charts import _money_formatter

    assert _money_formatter("JPY")(12.0, 0) == "¥12"
    assert _money_formatter("KWD")(12.0, 0) == "12.000 KWD"
    assert _money_formatter("USD")(12.0, 0) == "$12.00"
