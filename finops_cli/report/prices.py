"""Time-weighted spot-price statistics: a price holds until the next change.

Spot-price feeds publish change events, not samples at a regular cadence, so a plain mean of the events
over-weights turbulent hours: every statistic here weights a price by how long it was in effect inside the window.
Pure: a ``spot_prices`` table in (docs/formats.md has its columns), numbers out; :func:`store_price_table` reads
the store's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from finops_cli.errors import InputError

if TYPE_CHECKING:
    from finops_cli.store import Store

Statistic = Literal["mean", "p50", "p90", "latest", "min", "max"]
STATISTICS: tuple[str, ...] = ("mean", "p50", "p90", "latest", "min", "max")
Per = Literal["instance_hour", "gpu_hour"]

#: group keys of the ``finops prices`` table
GROUP_KEYS: list[str] = ["provider", "region", "zone", "instance_type", "product_description", "price_kind"]


class NoPriceData(LookupError):
    """No price rows match the provider/region/instance type (and window) asked for."""


class NoGpuCount(NoPriceData):
    """Prices are stored but the pricebook gives no GPU count for the type: the fix is a pricebook row."""


def _utc(when: datetime | pd.Timestamp) -> pd.Timestamp:
    ts = pd.Timestamp(when)
    return ts.tz_localize(UTC) if ts.tzinfo is None else ts.tz_convert(UTC)


def _frame(prices: pa.Table | pd.DataFrame) -> pd.DataFrame:
    df = prices.to_pandas() if isinstance(prices, pa.Table) else prices.copy()
    for col in ("zone", "product_description", "price_kind", "accelerator"):
        if col not in df.columns:
            df[col] = None
    if "gpus" not in df.columns:
        df["gpus"] = np.nan
    df["timestamp"] = pd.to_datetime(df["timestamp"], utc=True)
    return df


def _region_mask(df: pd.DataFrame, region: str) -> pd.Series:
    """``region`` matches a region (``us-east-1``) or one zone (``us-east-1a``)."""
    return (df["region"] == region) | (df["zone"] == region)


def weighted_segments(
    timestamps: Iterable[pd.Timestamp],
    prices: Iterable[float],
    start: pd.Timestamp | None,
    end: pd.Timestamp,
) -> tuple[np.ndarray, np.ndarray]:
    """One zone's price changes as (prices, seconds in effect) inside ``[start, end]``, zero-length segments
    dropped: a price holds until the next change (or ``end``); the one in effect at ``start`` counts from there."""
    s = pd.Series(list(prices), index=pd.DatetimeIndex(list(timestamps))).sort_index()
    s = s[~s.index.duplicated(keep="last")]
    s = s[s.index <= end]
    if start is not None:
        before = s[s.index <= start]
        s = s[s.index > start]
        if len(before):
            s = pd.concat([pd.Series([before.iloc[-1]], index=pd.DatetimeIndex([start])), s])
    if s.empty:
        return np.array([]), np.array([])
    idx = s.index.append(pd.DatetimeIndex([end]))
    seconds = (idx[1:] - idx[:-1]).total_seconds().to_numpy()
    values = s.to_numpy(dtype=float)
    keep = seconds > 0
    return values[keep], seconds[keep]


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """Lower weighted quantile: the smallest value ``v`` with ``Σ w[x ≤ v] ≥ q·Σ w``.

    For prices weighted by seconds in effect, p90 is the price that was not exceeded 90 % of the time.
    """
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    cum = np.cumsum(w)
    target = q * cum[-1]
    i = int(np.searchsorted(cum, target - 1e-9 * cum[-1], side="left"))
    return float(v[min(i, len(v) - 1)])


def _series_stats(group: pd.DataFrame, value_col: str, start: pd.Timestamp | None, end: pd.Timestamp) -> dict[str, Any]:
    """Pool the per-zone segments of one group and compute every statistic."""
    vals: list[np.ndarray] = []
    secs: list[np.ndarray] = []
    latest: list[float] = []
    for _zone, zdf in group.groupby(group["zone"].fillna(""), sort=False):
        zdf = zdf.dropna(subset=[value_col])
        if zdf.empty:
            continue
        v, s = weighted_segments(zdf["timestamp"], zdf[value_col], start, end)
        if len(v) == 0:
            # only a change exactly at ``end`` (or a single event): count it as a point
            in_window = zdf[(zdf["timestamp"] <= end) & ((start is None) | (zdf["timestamp"] >= (start or end)))]
            if in_window.empty:
                continue
            v = np.array([float(in_window.sort_values("timestamp")[value_col].iloc[-1])])
            s = np.array([0.0])
        vals.append(v)
        secs.append(s)
        latest.append(float(zdf.sort_values("timestamp")[value_col].iloc[-1]))
    if not vals:
        raise NoPriceData("no prices in the window")
    v = np.concatenate(vals)
    s = np.concatenate(secs)
    w = s if s.sum() > 0 else np.ones_like(s)
    return {
        "min": float(v.min()),
        "mean": float(np.average(v, weights=w)),
        "p50": weighted_quantile(v, w, 0.5),
        "p90": weighted_quantile(v, w, 0.9),
        "max": float(v.max()),
        "latest": float(np.mean(latest)),
        "seconds": float(s.sum()),
    }


#: AWS spot prices are quoted per operating system; a feed that names none means this one (as boto3 asks).
DEFAULT_PRODUCTS: dict[str, str] = {"aws": "Linux/UNIX"}


@dataclass(frozen=True)
class FeedStat:
    """One feed statistic and what it was computed from (recorded in ``plan.json``'s ``prices``)."""

    value: float
    start: datetime
    end: datetime
    samples: int  # price-change events inside the window
    product: str | None  # the one product description used (None: the feed carries none)
    newest: datetime  # newest price change used
    #: hours of the window the data actually covers: from the window start (when a price was in effect there) or
    #: the first price change inside it, to the window end; less than ``window_days × 24`` on a young feed
    covered_hours: float | None = None
    window_days: float | None = None


def _select_product(
    sel: pd.DataFrame, provider: str, product: str | None, what: str
) -> tuple[pd.DataFrame, str | None]:
    """Rows of exactly one product: ``product``, else the provider's default, else the only one present.

    A statistic over several products (Linux and Windows spot prices of one instance type) is never
    computed: it prices a pool at a blend no one pays.
    """
    present = sorted({str(p) for p in sel["product_description"].dropna().unique()})
    wanted = product or DEFAULT_PRODUCTS.get(provider)
    if wanted is None:
        if len(present) > 1:
            raise NoPriceData(
                f"{what} mixes {len(present)} products ({', '.join(present)}); choose one with product: in price_feed"
            )
        return sel, present[0] if present else None
    if not present and product is None:
        return sel, None  # a feed without product descriptions (generic CSV): nothing to mix
    chosen = sel[sel["product_description"] == wanted]
    if chosen.empty:
        have = ", ".join(present) or "none"
        raise NoPriceData(f"no {wanted!r} prices stored for {what} (products stored: {have})")
    return chosen, wanted


def feed_statistic(
    prices: pa.Table | pd.DataFrame,
    provider: str,
    region: str,
    instance_type: str,
    statistic: Statistic = "p90",
    window_days: float = 30.0,
    *,
    per: Per = "instance_hour",
    price_kind: str = "spot",
    product: str | None = None,
    end: datetime | None = None,
) -> FeedStat:
    """One time-weighted price statistic for a provider × region (all its zones pooled) or zone × instance type
    × product, in USD per instance-hour (``per="gpu_hour"``: per GPU-hour, from the GPU count recorded at ingest).

    ``latest`` is the latest price per zone, averaged over zones; p50/p90 are lower time-weighted quantiles. The
    window ends at the earlier of ``end`` (the horizon's end) and the newest matching price and spans
    ``window_days`` before it (docs/economics.md §1). ``product`` defaults to :data:`DEFAULT_PRODUCTS`, else the
    only one present. Raises :class:`NoPriceData` when nothing matches or products would mix.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}; got {statistic!r}")
    df = _frame(prices)
    what = f"{provider} {region} {instance_type} ({price_kind})"
    mask = (df["provider"] == provider) & (df["instance_type"] == instance_type) & _region_mask(df, region)
    mask &= df["price_kind"].fillna("spot") == price_kind
    sel = df[mask]
    if sel.empty:
        raise NoPriceData(f"no spot prices stored for {what}")
    sel, used_product = _select_product(sel, provider, product, what)
    value_col = "usd_per_gpu_hour" if per == "gpu_hour" else "usd_per_instance_hour"
    if sel[value_col].isna().all():
        from finops_cli.catalog.gpus import instance_gpu_facts, missing_row_hint

        facts = instance_gpu_facts(provider, instance_type)  # a row added after the prices were ingested
        if facts is None:
            raise NoGpuCount(f"{len(sel):,} prices stored for {what} but {missing_row_hint(provider, instance_type)}")
        sel = sel.assign(usd_per_gpu_hour=sel["usd_per_instance_hour"] / facts[0])
    end_ts = sel["timestamp"].max() if end is None else min(sel["timestamp"].max(), _utc(end))
    start_ts = end_ts - timedelta(days=float(window_days))
    try:
        stats = _series_stats(sel, value_col, start_ts, end_ts)
    except NoPriceData:
        window = f"the {window_days:g} days before {end_ts.isoformat()}"
        raise NoPriceData(f"no spot prices for {what} in {window}") from None
    in_window = sel[(sel["timestamp"] > start_ts) & (sel["timestamp"] <= end_ts)]
    upto = sel[sel["timestamp"] <= end_ts]["timestamp"]
    used = upto.max()
    covered_from = start_ts if upto.min() <= start_ts else upto.min()  # a price in effect at the start covers it
    return FeedStat(
        value=float(stats[statistic]),
        start=start_ts.to_pydatetime(),
        end=end_ts.to_pydatetime(),
        samples=len(in_window),
        product=used_product,
        newest=used.to_pydatetime(),
        covered_hours=max((end_ts - covered_from).total_seconds(), 0.0) / 3600.0,
        window_days=float(window_days),
    )


#: the statistics of a ``finops prices`` row, in column order
_TABLE_STATS = ("min", "mean", "p50", "p90", "max", "latest")


def price_table(
    prices: pa.Table | pd.DataFrame,
    *,
    instance_types: list[str] | None = None,
    regions: list[str] | None = None,
    since: datetime | None = None,
) -> pd.DataFrame:
    """The ``finops prices`` table: per provider × region/zone × instance type, time-weighted statistics.

    Columns: the :data:`GROUP_KEYS`, ``samples`` (price-change events in the window), ``hours`` covered,
    ``min, mean, p50, p90, max, latest`` (USD per instance-hour), ``gpus``, ``usd_per_gpu_hour_mean``.
    The window runs from ``since`` (default: each group's first event) to the newest event in the table, so
    every group is seen up to the same instant and a zone's last price counts until then.
    """
    df = _frame(prices)
    if instance_types:
        df = df[df["instance_type"].isin(instance_types)]
    if regions:
        df = df[df["region"].isin(regions) | df["zone"].isin(regions)]
    start = None if since is None else _utc(since)
    end_ts = _utc(df["timestamp"].max())
    rows = []
    keys = GROUP_KEYS
    filled = df.assign(**{k: df[k].fillna("") for k in keys})
    for key, group in filled.groupby(keys, sort=True):
        g = group.assign(zone=group["zone"].replace("", None))
        try:
            st = _series_stats(g, "usd_per_instance_hour", start, end_ts)
        except NoPriceData:
            continue
        in_window = g[(g["timestamp"] <= end_ts) & ((start is None) | (g["timestamp"] > (start or end_ts)))]
        gpus = g["gpus"].dropna()
        gpus_val = float(gpus.iloc[0]) if len(gpus) else None
        rows.append(
            {
                **{k: (v or None) for k, v in zip(keys, key, strict=True)},
                "samples": len(in_window),
                "hours": st["seconds"] / 3600.0,
                **{s: st[s] for s in _TABLE_STATS},
                "gpus": gpus_val,
                "accelerator": next(iter(g["accelerator"].dropna()), None),
                "usd_per_gpu_hour_mean": st["mean"] / gpus_val if gpus_val else None,
            }
        )
    columns = [*keys, "samples", "hours", *_TABLE_STATS, "gpus", "accelerator", "usd_per_gpu_hour_mean"]
    return pd.DataFrame(rows, columns=columns)


def store_price_table(
    st: Store,
    *,
    instance_types: list[str] | None,
    regions: list[str] | None,
    since: datetime | None,
) -> pd.DataFrame:
    """:func:`price_table` over the store's ``spot_prices``; nothing to show is an :class:`InputError`."""
    table = st.read("spot_prices")
    if table is None or table.num_rows == 0:
        raise InputError("no spot prices in the store; run 'finops ingest spot-prices' first")
    out = price_table(table, instance_types=instance_types, regions=regions, since=since)
    if out.empty:
        raise InputError(
            "no spot prices match `instance_types`/`regions`/`since`", mentions=("instance_types", "regions", "since")
        )
    return out


def to_markdown(table: pd.DataFrame) -> str:
    """The ``finops prices`` table as GitHub markdown."""
    from finops_cli.report.escape import md_table
    from finops_cli.report.format import money

    headers = ["provider", "region", "zone", "instance type", "product", "kind", "changes", "min", "mean", "p50",
               "p90", "max", "latest", "$/GPU-h mean"]  # fmt: skip

    def usd(x: float | None) -> str:
        return money(x, "USD", decimals=4)

    rows = [
        [r.provider, r.region, r.zone or "", r.instance_type, r.product_description or "", r.price_kind,
         f"{r.samples:,}",
         *(usd(getattr(r, s)) for s in _TABLE_STATS), usd(r.usd_per_gpu_hour_mean)]
        for r in table.itertuples(index=False)
    ]  # fmt: skip
    align = ["left"] * 6 + ["right"] * 8
    trusted = [False] * 6 + [True] * 8
    note = (
        "\n\nTime-weighted: each price holds until the next change, so a statistic weights a price by how long "
        "it was in effect (not a plain mean of change events). USD per instance-hour unless noted. Each row is one "
        "product: a feed's statistic never pools products (Linux and Windows prices differ by 2×)."
    )
    return md_table(headers, rows, align, trusted=trusted) + note + "\n"  # type: ignore[arg-type]
