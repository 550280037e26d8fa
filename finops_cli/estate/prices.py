"""Resolve every substrate's price to a number before any math runs: the one place prices come from.

A substrate's marginal price is a number, a ``price_feed`` (a time-weighted statistic over the spot-price store)
or a ``price_ref`` (a pricebook row); :func:`resolve_fleet` turns each into ``price_per_gpu_hour`` in the fleet's
currency and records a :class:`PriceSource`. The window rule, currencies and errors: docs/economics.md §1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Literal

from finops_cli.catalog.prices import ReferencePrice, reference_price, reference_price_age_days
from finops_cli.errors import InputError
from finops_cli.schema.estate import FX_PAIR, Fleet, PriceFeed, Substrate

if TYPE_CHECKING:
    from finops_cli.report.prices import FeedStat
    from finops_cli.store import Store

PriceMethod = Literal["fixed", "price_feed", "price_ref", "api", "committed"]

#: the currency of every feed (``usd_per_*`` columns of the spot-price store) and reference price
QUOTE_CURRENCY = "USD"


@dataclass(frozen=True)
class PriceSource:
    """Where one substrate's marginal price came from: ``value`` per GPU-hour in the fleet's ``currency`` is
    ``quoted`` (in ``quoted_currency``) × ``fx_rate``; ``age_days`` counts from ``read_on`` or the feed's newest
    price to ``as_of``."""

    substrate: str
    method: PriceMethod
    value: float | None
    currency: str
    detail: str
    quoted: float | None = None
    quoted_currency: str | None = None
    fx_rate: float | None = None
    statistic: str | None = None
    window_start: datetime | None = None
    window_end: datetime | None = None
    samples: int | None = None
    product: str | None = None
    read_on: date | None = None
    age_days: int | None = None
    unit_prices: dict[str, float] | None = None  # api substrates: per unit served, in ``currency``
    pricebook: ReferencePrice | None = None  # the pricebook row a price_ref resolved to
    covered_hours: float | None = None  # price_feed: hours of its window the data covers
    window_days: float | None = None  # price_feed: the window the statistic is asked over

    @property
    def source(self) -> str:
        """``fleet`` (a number in fleet.yaml, API unit prices, prepaid), ``price_feed`` or ``price_ref``."""
        return self.method if self.method in ("price_feed", "price_ref") else "fleet"

    def as_dict(self) -> dict[str, object]:
        """The ``plan.json`` ``prices[]`` record (see :class:`finops_cli.schema.plan.PriceUsed`)."""

        def iso(x: datetime | date | None) -> str | None:
            return None if x is None else x.isoformat().replace("+00:00", "Z")

        return {
            "substrate": self.substrate,
            "value": None if self.value is None else round(self.value, 6),
            "currency": self.currency,
            "source": self.source,
            "method": self.method,
            "statistic": self.statistic,
            "window_start": iso(self.window_start),
            "window_end": iso(self.window_end),
            "samples": self.samples,
            "product": self.product,
            "age_days": self.age_days,
            "quoted": None if self.quoted is None else round(self.quoted, 6),
            "quoted_currency": self.quoted_currency,
            "fx_rate": self.fx_rate,
            "read_on": iso(self.read_on),
            "detail": self.detail,
            "unit_prices": self.unit_prices,
            "ref": None if self.pricebook is None else self.pricebook.ref,
            "pricebook_region": None if self.pricebook is None else self.pricebook.region,
            "pricebook_source": None if self.pricebook is None else self.pricebook.source,
            "pricebook": None if self.pricebook is None else self.pricebook.origin,
            "fetched_at": None if self.pricebook is None else self.pricebook.fetched_at,
            "covered_hours": None if self.covered_hours is None else round(self.covered_hours, 3),
            "window_days": self.window_days,
        }

    @property
    def per_gpu_hour(self) -> str:
        """``3.9000 CAD/GPU-hour (× 1.37 USD:CAD)``."""
        fx = "" if self.fx_rate in (None, 1.0) else f" (× {self.fx_rate:g} {self.quoted_currency}:{self.currency})"
        return f"{self.value:.4f} {self.currency}/GPU-hour{fx}"

    def note(self) -> str:
        """One line for plan.json's notes: where this substrate's price came from."""
        if self.unit_prices is not None or self.value is None:
            return f"price of {self.substrate}: {self.detail}"
        return f"price of {self.substrate}: {self.per_gpu_hour} from {self.detail}"


def feed_label(feed: PriceFeed) -> str:
    """``aws/us-east-1/p5.48xlarge Linux/UNIX p90 over 30 days`` — how errors and reports name a feed."""
    from finops_cli.report.prices import DEFAULT_PRODUCTS  # numpy/pandas: only a fleet with feeds pays for them

    product = feed.product or DEFAULT_PRODUCTS.get(feed.provider)
    what = f"{feed.provider}/{feed.region}/{feed.instance_type}" + (f" {product}" if product else "")
    return f"{what} {feed.statistic} over {feed.window_days:g} days"


def feed_price(substrate_id: str, feed: PriceFeed, store: Store | None, end: datetime) -> FeedStat:
    """The feed's statistic in USD per GPU-hour from the store's ``spot_prices`` (the instance price divided by
    ``gpus_per_instance`` when given, else the per-GPU price recorded at ingest); ``end``: the horizon's end."""
    from finops_cli.report.prices import NoGpuCount, NoPriceData, feed_statistic

    label = feed_label(feed)
    hint = "ingest spot prices first (finops ingest spot-prices ...) or give price_per_gpu_hour"
    if store is None:
        raise InputError(f"substrate {substrate_id}: price_feed {label} needs the spot-price store; {hint}")
    import pyarrow.dataset as ds

    # only the feed's provider partition and instance type are read (a feed history can be millions of rows)
    wanted = (ds.field("provider") == feed.provider) & (ds.field("instance_type") == feed.instance_type)
    table = store.read("spot_prices", filter=wanted)
    has_provider = store.has("spot_prices") and feed.provider in store.partition_values("spot_prices", "provider")
    if table is None or not has_provider:
        raise InputError(
            f"substrate {substrate_id}: price_feed {label}: the store {store.location} has no {feed.provider} "
            f"spot prices; {hint}"
        )
    args = (table, feed.provider, feed.region, feed.instance_type, feed.statistic, feed.window_days)
    try:
        if feed.gpus_per_instance:
            stat = feed_statistic(*args, product=feed.product, end=end)
            stat = replace(stat, value=stat.value / feed.gpus_per_instance)
        else:
            stat = feed_statistic(*args, per="gpu_hour", product=feed.product, end=end)
    except NoGpuCount as exc:  # prices are there: the fix is a pricebook row (or gpus_per_instance), not an ingest
        raise InputError(f"substrate {substrate_id}: price_feed {label}: {exc} (or give gpus_per_instance)") from None
    except NoPriceData as exc:
        raise InputError(f"substrate {substrate_id}: price_feed {label}: {exc}; {hint}") from None
    if not stat.value > 0:
        raise InputError(
            f"substrate {substrate_id}: price_feed {label}: resolved to {stat.value!r}, expected a price > 0"
        )
    return stat


def parse_fx(texts: list[str] | None) -> dict[str, float]:
    """``--fx USD:CAD=1.37`` (repeatable) → ``{"USD:CAD": 1.37}``; a malformed one is exit 2."""
    out: dict[str, float] = {}
    for text in texts or []:
        pair, _, rate_text = text.strip().partition("=")
        pair = pair.strip().upper()
        try:
            rate = float(rate_text)
        except ValueError:
            rate = float("nan")
        src, _, dst = pair.partition(":")
        if not (FX_PAIR.fullmatch(pair) and src != dst and math.isfinite(rate) and rate > 0):
            raise InputError(f"{text!r}: expected FROM:TO=RATE such as USD:CAD=1.37 (1 FROM = RATE TO)", param="fx")
        out[pair] = rate
    return out


def fx_rates(fleet: Fleet, fx: dict[str, float] | None = None) -> dict[str, float]:
    """The fleet's ``fx:`` overridden by ``--fx``; a rate into another currency than the fleet's is exit 2."""
    for pair in fx or {}:
        if pair.partition(":")[2] != fleet.currency:
            raise InputError(
                f"{pair}: converts into {pair[4:]}, but the fleet's currency is {fleet.currency}", param="fx"
            )
    return {**fleet.fx, **(fx or {})}


def _convert(s: Substrate, what: str, usd: float, currency: str, rates: dict[str, float]) -> tuple[float, float]:
    """``usd`` (USD) in the fleet's ``currency``, and the rate used; no rate for a mix is exit 2."""
    if currency == QUOTE_CURRENCY:
        return usd, 1.0
    pair = f"{QUOTE_CURRENCY}:{currency}"
    if pair not in rates:
        raise InputError(
            f"substrate {s.id}: {what} is in {QUOTE_CURRENCY} but the fleet's currency is {currency}; prices in "
            f"different currencies are never mixed: give fx: {{{pair}: RATE}} in fleet.yaml or `fx` {pair}=RATE",
            mentions=("fx",),
        )
    return usd * rates[pair], rates[pair]


def resolve_price_ref(s: Substrate) -> list[tuple[str | None, ReferencePrice]]:
    """The pricebook rows a substrate's ``price_ref`` names, in its region first: ``[(None, row)]`` for a GPU
    substrate, ``[(unit, row), …]`` for an api one (a plain ref prices the row's own unit, a mapping names units)."""
    if s.price_ref is None:
        return []
    if s.kind == "api":
        refs: dict[str | None, str] = {None: s.price_ref} if isinstance(s.price_ref, str) else {}
        if isinstance(s.price_ref, dict):
            refs.update(s.price_ref.items())
        out: list[tuple[str | None, ReferencePrice]] = []
        for unit, text in refs.items():
            ref = reference_price(text, region=s.region)
            if ref.usd_per_unit is None:
                raise InputError(f"{text} is priced per GPU-hour; an api substrate needs a per-unit (api) price")
            out.append((unit or ref.unit or "unit", ref))
        return out
    ref = reference_price(str(s.price_ref), region=s.region)
    if ref.usd_per_gpu_hour is None:
        raise InputError(f"{s.price_ref} is a per-unit (api) price, not per GPU-hour")
    return [(None, ref)]


def _ref_detail(ref: ReferencePrice, age: int, region: str | None) -> str:
    where = "" if not region or not ref.region or ref.region == region else f"; priced in {ref.region}, not {region}"
    return f"{ref.provenance()}, {age} days old{where}"


def _resolve_ref(s: Substrate, currency: str, rates: dict[str, float], as_of: date) -> tuple[Substrate, PriceSource]:
    try:
        refs = resolve_price_ref(s)
    except InputError as exc:
        raise InputError(f"substrate {s.id}: price_ref: {exc}") from None
    ref = refs[0][1]
    age = reference_price_age_days(ref, as_of)
    if s.kind != "api":
        price, rate = _convert(s, f"price_ref {ref.ref}", ref.usd_per_gpu_hour or 0.0, currency, rates)
        src = PriceSource(
            s.id, "price_ref", price, currency, _ref_detail(ref, age, s.region), ref.usd_per_gpu_hour,
            QUOTE_CURRENCY, rate, read_on=ref.read_on, age_days=age, pricebook=ref,
        )  # fmt: skip
        return s.model_copy(update={"price_per_gpu_hour": price}), src
    prices: dict[str, float] = {}
    for unit, r in refs:
        prices[str(unit)], rate = _convert(s, f"price_ref {r.ref}", r.usd_per_unit or 0.0, currency, rates)
    units = ", ".join(f"{u} {p:g}" for u, p in prices.items())
    detail = f"per unit: {units}; " + "; ".join(_ref_detail(r, age, s.region) for _, r in refs)
    src = PriceSource(
        s.id, "price_ref", None, currency, detail, ref.usd_per_unit, QUOTE_CURRENCY, rate,
        read_on=ref.read_on, age_days=age, unit_prices=prices, pricebook=ref,
    )  # fmt: skip
    return s.model_copy(update={"price_per_unit": prices}), src


def _resolve_one(
    s: Substrate, store: Store | None, currency: str, rates: dict[str, float], as_of: date, end: datetime
) -> tuple[Substrate, PriceSource]:
    if s.price_ref is not None:
        return _resolve_ref(s, currency, rates, as_of)
    if s.kind == "api":
        units = ", ".join(f"{u} {p:g}" for u, p in (s.price_per_unit or {}).items())
        return s, PriceSource(s.id, "api", None, currency, f"price_per_unit in fleet.yaml: {units}")
    if s.price_feed is not None:
        feed = s.price_feed
        stat = feed_price(s.id, feed, store, end)
        price, rate = _convert(s, f"price_feed {feed_label(feed)}", stat.value, currency, rates)
        detail = (
            f"spot-price store: {feed_label(feed)} ({stat.samples} price changes, "
            f"{stat.start:%Y-%m-%d %H:%M} → {stat.end:%Y-%m-%d %H:%M} UTC)"
        )
        src = PriceSource(
            s.id, "price_feed", price, currency, detail, stat.value, QUOTE_CURRENCY, rate, feed.statistic,
            stat.start, stat.end, stat.samples, stat.product, age_days=max(0, (as_of - stat.newest.date()).days),
            covered_hours=stat.covered_hours, window_days=stat.window_days,
        )  # fmt: skip
        return s.model_copy(update={"price_per_gpu_hour": price}), src
    if s.price_per_gpu_hour is not None:
        return s, PriceSource(s.id, "fixed", s.price_per_gpu_hour, currency, "price_per_gpu_hour in fleet.yaml")
    # a reserved substrate without a marginal price: prepaid, one more GPU-hour costs nothing
    return s.model_copy(update={"price_per_gpu_hour": 0.0}), PriceSource(
        s.id, "committed", 0.0, currency, "reserved: prepaid capacity, marginal price 0"
    )


def resolve_fleet(
    fleet: Fleet,
    store: Store | None = None,
    *,
    horizon_end: datetime,
    fx: dict[str, float] | None = None,
    as_of: date | None = None,
) -> tuple[Fleet, list[PriceSource]]:
    """Every substrate with a numeric ``price_per_gpu_hour`` in the fleet's currency, plus provenance.

    ``store`` is read for ``price_feed``s, whose window ends at the earlier of ``horizon_end`` and the feed's
    newest price; ``fx`` (``--fx``) overrides the fleet's rates; ages count to ``as_of`` (default today, UTC).
    """
    rates = fx_rates(fleet, fx)
    day = as_of or datetime.now(UTC).date()
    resolved: list[Substrate] = []
    sources: list[PriceSource] = []
    for s in fleet.substrates:
        r, src = _resolve_one(s, store, fleet.currency, rates, day, horizon_end)
        resolved.append(r)
        sources.append(src)
    return fleet.model_copy(update={"substrates": resolved}), sources


def fx_used(sources: list[PriceSource]) -> dict[str, float]:
    """The exchange rates actually applied (``{"USD:CAD": 1.37}``), for plan.json and the report."""
    return {
        f"{s.quoted_currency}:{s.currency}": s.fx_rate
        for s in sources
        if s.fx_rate is not None and s.quoted_currency and s.quoted_currency != s.currency
    }


def needs_store(fleet: Fleet) -> bool:
    """True when some substrate prices from the spot-price store."""
    return any(s.price_feed is not None for s in fleet.substrates)


def reference_price_notes(sources: list[PriceSource]) -> list[str]:
    """One line per price that came from the reference table or a feed, for report footers."""
    out = []
    for src in sources:
        if src.method == "price_ref" and src.value is None:
            out.append(f"{src.substrate}: {src.detail}")
        elif src.method == "price_ref":
            out.append(f"{src.substrate}: {src.per_gpu_hour}, {src.detail}")
        elif src.method == "price_feed":
            out.append(f"{src.substrate}: {src.per_gpu_hour} from the {src.detail}")
    return out
