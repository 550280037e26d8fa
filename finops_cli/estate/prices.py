"""Resolve every substrate's price to a number before any math runs.

A substrate gives its marginal price one of three ways: ``price_per_gpu_hour`` (a number),
``price_feed`` (a time-weighted statistic over the spot-price store, per GPU-hour) or ``price_ref``
(a row of ``finops_cli/pricebooks/reference_prices.csv``). :func:`resolve_fleet` returns a fleet whose substrates
all carry ``price_per_gpu_hour`` (``model_copy(update=...)``; the models stay frozen) and, beside it,
the provenance of every price so that reports can say which prices came from a feed or a reference
table and how old a reference price is. Missing feed data is an :class:`InputError` naming the feed,
never a silent zero.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import TYPE_CHECKING, Literal

from finops_cli.errors import InputError
from finops_cli.estate.load import Estate
from finops_cli.estate.pricebook import reference_price, reference_price_age_days
from finops_cli.schema.estate import Fleet, PriceFeed, Substrate

if TYPE_CHECKING:
    from finops_cli.store import Store

PriceMethod = Literal["fixed", "price_feed", "price_ref", "api", "committed"]


@dataclass(frozen=True)
class PriceSource:
    """Where one substrate's marginal price came from.

    ``age_days`` is set for reference prices: days between ``read_on`` and the as-of date.
    """

    substrate: str
    method: PriceMethod
    usd_per_gpu_hour: float | None
    detail: str
    read_on: date | None = None
    age_days: int | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "substrate": self.substrate,
            "method": self.method,
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "detail": self.detail,
            "read_on": self.read_on.isoformat() if self.read_on else None,
            "age_days": self.age_days,
        }


def feed_label(feed: PriceFeed) -> str:
    """``aws/us-east-1/p5.48xlarge p90 over 30 days`` — how errors and reports name a feed."""
    return f"{feed.provider}/{feed.region}/{feed.instance_type} {feed.statistic} over {feed.window_days:g} days"


def feed_price_per_gpu_hour(
    substrate_id: str, feed: PriceFeed, store: Store | None, end: datetime | None = None
) -> float:
    """The feed's statistic in currency per GPU-hour, from the store's ``spot_prices`` dataset.

    ``usd_per_instance_hour / gpus_per_instance`` when the feed gives ``gpus_per_instance``; otherwise
    the per-GPU price recorded at ingest (from the pricebook's instance table).
    """
    from finops_cli.report.prices import NoPriceData, price_statistic

    label = feed_label(feed)
    hint = "ingest spot prices first (finops ingest spot-prices ...) or give price_per_gpu_hour"
    if store is None:
        raise InputError(f"substrate {substrate_id}: price_feed {label} needs the spot-price store; {hint}")
    import pyarrow.dataset as ds

    table = store.read("spot_prices", filter=ds.field("provider") == feed.provider)
    if table is None or table.num_rows == 0:
        raise InputError(
            f"substrate {substrate_id}: price_feed {label}: the store {store.root} has no {feed.provider} spot prices; "
            f"{hint}"
        )
    try:
        if feed.gpus_per_instance:
            per_instance = price_statistic(
                table, feed.provider, feed.region, feed.instance_type, feed.statistic, feed.window_days, end=end
            )
            price = per_instance / feed.gpus_per_instance
        else:
            price = price_statistic(
                table,
                feed.provider,
                feed.region,
                feed.instance_type,
                feed.statistic,
                feed.window_days,
                per="gpu_hour",
                end=end,
            )
    except NoPriceData as exc:
        raise InputError(f"substrate {substrate_id}: price_feed {label}: {exc}; {hint}") from None
    if not price > 0:
        raise InputError(f"substrate {substrate_id}: price_feed {label}: resolved to {price!r}, expected a price > 0")
    return float(price)


def _resolve_one(
    s: Substrate, store: Store | None, as_of: date | None, end: datetime | None
) -> tuple[Substrate, PriceSource]:
    if s.kind == "api":
        units = ", ".join(f"{u} {p:g}" for u, p in (s.price_per_unit or {}).items())
        return s, PriceSource(s.id, "api", None, f"per unit: {units}")
    if s.price_per_gpu_hour is not None and s.price_feed is None and s.price_ref is None:
        return s, PriceSource(s.id, "fixed", s.price_per_gpu_hour, "price_per_gpu_hour in fleet.yaml")
    if s.price_feed is not None:
        price = feed_price_per_gpu_hour(s.id, s.price_feed, store, end)
        src = PriceSource(s.id, "price_feed", price, f"spot-price store: {feed_label(s.price_feed)}")
        return s.model_copy(update={"price_per_gpu_hour": price}), src
    if s.price_ref is not None:
        ref = reference_price(s.price_ref)
        if ref.usd_per_gpu_hour is None:
            raise InputError(f"substrate {s.id}: price_ref {s.price_ref} is a per-unit (API) price, not per GPU-hour")
        age = reference_price_age_days(ref, as_of)
        detail = f"reference price {ref.ref} ({ref.source}), read {ref.read_on.isoformat()}, {age} days old"
        src = PriceSource(s.id, "price_ref", ref.usd_per_gpu_hour, detail, ref.read_on, age)
        return s.model_copy(update={"price_per_gpu_hour": ref.usd_per_gpu_hour}), src
    # a reserved substrate without a marginal price: prepaid, one more GPU-hour costs nothing
    return s.model_copy(update={"price_per_gpu_hour": 0.0}), PriceSource(
        s.id, "committed", 0.0, "reserved: prepaid capacity, marginal price 0"
    )


def resolve_fleet(
    fleet: Fleet, store: Store | None = None, *, as_of: date | None = None, feed_end: datetime | None = None
) -> tuple[Fleet, list[PriceSource]]:
    """Every substrate with a numeric ``price_per_gpu_hour`` (APIs keep ``price_per_unit``), plus provenance.

    Parameters
    ----------
    store
        Needed only when a substrate has a ``price_feed``.
    as_of
        Date reference-price ages are counted to (default: today, UTC).
    feed_end
        End of the price-feed window (default: the newest price of that feed in the store).
    """
    resolved: list[Substrate] = []
    sources: list[PriceSource] = []
    for s in fleet.substrates:
        r, src = _resolve_one(s, store, as_of, feed_end)
        resolved.append(r)
        sources.append(src)
    return fleet.model_copy(update={"substrates": resolved}), sources


def resolve_estate(
    estate: Estate, store: Store | None = None, *, as_of: date | None = None, feed_end: datetime | None = None
) -> tuple[Estate, list[PriceSource]]:
    """:func:`resolve_fleet` for an :class:`Estate` (workloads unchanged)."""
    fleet, sources = resolve_fleet(estate.fleet, store, as_of=as_of, feed_end=feed_end)
    return replace(estate, fleet=fleet), sources


def needs_store(fleet: Fleet) -> bool:
    """True when some substrate prices from the spot-price store."""
    return any(s.price_feed is not None for s in fleet.substrates)


def reference_price_notes(sources: list[PriceSource]) -> list[str]:
    """One line per price that came from the reference table or a feed, for report footers."""
    out = []
    for src in sources:
        if src.method == "price_ref":
            out.append(f"{src.substrate}: {src.detail}")
        elif src.method == "price_feed":
            out.append(f"{src.substrate}: {src.usd_per_gpu_hour:.4f}/GPU-hour from the {src.detail}")
    return out
