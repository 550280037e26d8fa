"""The shared rich helpers: money/percent formatting and the money-table builder."""

from __future__ import annotations

from finops_cli.cli.render import Col, money, money_table, number, pct, table_text


def test_money_formats_sign_symbol_and_separators() -> None:
    assert money(1234.5, "USD") == "$1,234.50"
    assert money(-20, "usd") == "-$20.00"
    assert money(20, "USD", signed=True) == "+$20.00"
    assert money(-0.001, "USD", signed=True) == "$0.00"
    assert money(1_000_000, "CHF", decimals=0) == "1,000,000 CHF"
    assert money(None) == "—"
    assert money(float("nan")) == "—"


def test_pct_takes_a_fraction() -> None:
    assert pct(0.125) == "12.5%"
    assert pct(-0.02, signed=True) == "-2.0%"
    assert pct(0.1, signed=True) == "+10.0%"
    assert pct(None) == "—"
    assert number(12345.6) == "12,346"


def test_money_table_totals_and_alignment_without_colour() -> None:
    table = money_table(
        "Plan",
        [Col("Workload"), Col("GPU-hours", "number"), Col("Cost", "money"), Col("Change", "delta")],
        [["train", 1000, 2500.0, -100.0], ["serve", 24, 75.25, 30.0]],
        totals=True,
    )
    text = table_text(table)
    lines = text.splitlines()
    total = next(line for line in lines if "Total" in line)
    assert "$2,575.25" in total and "-$70.00" in total and "1,024" in total
    # money column right-aligned: the cost cells end in the same column
    train = next(line for line in lines if "train" in line)
    serve = next(line for line in lines if "serve" in line)
    assert train.index("$2,500.00") + len("$2,500.00") == serve.index("$75.25") + len("$75.25")
    assert "\x1b[" not in text
