"""One spot-price statistic as a number: what the tests compare (the product computes :class:`FeedStat`)."""

from __future__ import annotations

from finops_cli.report.prices import feed_statistic


def price_statistic(*args: object, product_description: str | None = None, **kwargs: object) -> float:
    """:func:`~finops_cli.report.prices.feed_statistic`'s value only (USD per instance-hour, or per GPU-hour with
    ``per="gpu_hour"``)."""
    return feed_statistic(*args, product=product_description, **kwargs).value  # type: ignore[arg-type]
