"""Prices that are old or thin, called out where decisions are made (``plan``, ``stack``, ``gate``).

Pure and light: ``gate`` runs these over plan.json's ``prices[]``, ``plan`` and ``stack`` over
:class:`finops_cli.estate.prices.PriceSource`. Ages are those recorded, counted to the plan's ``as_of``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

#: Default ``--max-price-age`` (days to ``--as-of``): a spot feed moves by the hour, a list price a few times a year
DEFAULT_MAX_PRICE_AGE_DAYS: dict[str, float] = {"price_feed": 30.0, "price_ref": 180.0}
#: A feed's statistic is thin when its data covers less than this share of its window ...
THIN_FEED_COVERAGE = 0.9
#: ... or rests on fewer price changes than this inside the window.
THIN_FEED_SAMPLES = 3


class _PriceRecord(Protocol):
    """What the checks read: :class:`PriceSource` (plan, stack) and plan.json's ``prices[]`` (gate) both have it."""

    @property
    def substrate(self) -> str: ...
    @property
    def method(self) -> str | None: ...
    @property
    def statistic(self) -> str | None: ...
    @property
    def samples(self) -> int | None: ...
    @property
    def age_days(self) -> int | None: ...
    @property
    def covered_hours(self) -> float | None: ...
    @property
    def window_days(self) -> float | None: ...


def price_age_limit(method: str | None, max_age_days: float | None = None) -> float | None:
    """The age above which a price is stale: ``max_age_days`` (``--max-price-age``), else the method's default."""
    if max_age_days is not None:
        return max_age_days
    return DEFAULT_MAX_PRICE_AGE_DAYS.get(method or "")


def covered_text(hours: float) -> str:
    """``5.7 h`` below two days, else ``12.5 days``."""
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"


def stale_prices(prices: Iterable[_PriceRecord], max_age_days: float | None = None) -> list[str]:
    """One sentence per price older than its limit (:func:`price_age_limit`)."""
    out = []
    for p in prices:
        limit = price_age_limit(p.method, max_age_days)
        if p.age_days is not None and limit is not None and p.age_days > limit:
            what = "spot-price feed's newest price" if p.method == "price_feed" else "reference price"
            out.append(
                f"price of {p.substrate}: the {what} is {p.age_days:,} days old, older than {limit:g} days "
                "(`max_price_age`)"
            )
    return out


def thin_prices(prices: Iterable[_PriceRecord]) -> list[str]:
    """One sentence per feed price whose data covers too little of its window or has too few price changes."""
    out = []
    for p in prices:
        if p.method != "price_feed" or p.covered_hours is None or not p.window_days:
            continue
        window_hours = p.window_days * 24.0
        short = p.covered_hours < THIN_FEED_COVERAGE * window_hours
        few = p.samples is not None and p.samples < THIN_FEED_SAMPLES
        if short or few:
            changes = "" if p.samples is None else f", {p.samples:,} price change{'s' if p.samples != 1 else ''}"
            out.append(
                f"price of {p.substrate}: {p.statistic or 'statistic'} of {covered_text(p.covered_hours)} of data"
                f"{changes}, not the {p.window_days:g} days of its window"
            )
    return out


def price_warnings(prices: Iterable[_PriceRecord], max_age_days: float | None = None) -> list[str]:
    """Stale and thin prices: what plan, stack and gate warn about."""
    listed = list(prices)
    return stale_prices(listed, max_age_days) + thin_prices(listed)
