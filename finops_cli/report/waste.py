"""Idle GPU waste: what the fleet paid for while its GPUs sat idle (docs/report.md gives the formulas, the price
sources in order, unobserved capacity and the Philly reference).

Pure: tables in, a :class:`WasteReport` out. :mod:`~finops_cli.report.waste_query` reads the store and
:mod:`~finops_cli.report.waste_rates` prices devices from the bill.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.errors import InputError
from finops_cli.report.escape import left_then_right, md_table, md_text
from finops_cli.report.format import money, number, pct, unit_price
from finops_cli.report.waste_rates import decoded, empty_rates, fleet_substrate_for, resource_key, resource_rates
from finops_cli.schema.estate import Fleet

GroupBy = Literal["team", "substrate", "instance_type", "device"]
GROUP_BYS: Final[tuple[GroupBy, ...]] = ("team", "substrate", "instance_type", "device")  # `in` narrows to GroupBy

PHILLY_MEAN_UTILIZATION = 0.52
PHILLY_REFERENCE = (
    "Jeon et al., Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads, "
    "USENIX ATC 2019 (Microsoft Philly: ~52 % average GPU utilisation)"
)

UNKNOWN = "(unknown)"
UNOBSERVED = "(unobserved)"
NO_RESOURCE_ID = "(no ResourceId)"
IDLE_NEEDS_UTILISATION = (
    "idle GPU-hours need utilisation data: run 'finops ingest utilization' with a trace of this month"
)

#: columns of the per-device usage table :func:`waste_reports_by` takes (one row per device × team × workload)
USAGE_COLUMNS = [
    "device_id",
    "resource_id",
    "host",
    "team",
    "workload",
    "accelerator",
    "samples",
    "zero_samples",
    "device_hours",
    "busy_hours",
]


@dataclass
class UtilHistogram:
    """Sample utilisation (0–1) in 1000 bins plus an exact count of zeros: deciles to within 0.1 percentage
    point without holding every sample."""

    bins: int = 1000
    counts: np.ndarray = field(default_factory=lambda: np.zeros(1000, dtype=np.int64))
    zeros: int = 0
    n: int = 0

    @classmethod
    def from_bins(cls, bins: pd.DataFrame) -> UtilHistogram:
        """From :data:`finops_cli.store.queries.WASTE_HISTOGRAM`'s rows (``bin, samples, zeros``)."""
        hist = cls()
        if len(bins):
            np.add.at(hist.counts, bins["bin"].to_numpy(dtype=np.int64), bins["samples"].to_numpy(dtype=np.int64))
            hist.n = int(bins["samples"].sum())
            hist.zeros = int(bins["zeros"].sum())
        return hist

    def share_at_zero(self) -> float:
        return self.zeros / self.n if self.n else 0.0

    def deciles(self) -> list[float]:
        """Utilisation at the 10th … 90th percentiles of samples (bin lower edges, exact 0 where zeros reach)."""
        if not self.n:
            return []
        targets = np.arange(1, 10) / 10 * self.n
        at = np.minimum(np.searchsorted(np.cumsum(self.counts), targets, side="left"), self.bins - 1)
        return [0.0 if self.zeros >= q else round(int(i) / self.bins, 4) for q, i in zip(targets, at, strict=True)]


@dataclass(kw_only=True)
class WasteReport:
    """Totals, groups, unobserved paid capacity and the utilisation distribution."""

    #: ``"utilisation"`` (idle measured from a trace) or ``"billing"`` (billed GPU spend only: idle unknown)
    basis: str = "utilisation"
    notes: list[str] = field(default_factory=list)
    by: str
    currency: str
    totals: dict[str, Any]
    groups: list[dict[str, Any]]
    unobserved: list[dict[str, Any]]
    distribution: dict[str, Any]
    priced_by: dict[str, float]
    baseline: dict[str, Any]
    #: why this month (the default-month rule's reason, or ``month`` given), for stderr
    month_reason: str = "`month`"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["month_reason"]
        return out


def usage_from_groups(groups: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """The :data:`USAGE_COLUMNS` table and the observed span (hours) from
    :data:`finops_cli.store.queries.WASTE_DEVICE_USAGE`'s groups: ``Σ_devices (last − first sample + interval)``."""
    usage = groups[USAGE_COLUMNS].reset_index(drop=True)
    sp = groups.groupby("device_id", dropna=False).agg(
        first=("first_ts", "min"), last=("last_ts", "max"), interval=("max_interval_s", "max")
    )
    span_hours = float(((sp["last"] - sp["first"]).dt.total_seconds() + sp["interval"]).sum() / 3600.0)
    return usage, span_hours


def unobserved_groups(never: pa.Table, by: GroupBy) -> list[dict[str, Any]]:
    """Billed GPU resources the trace never saw, summed per ``by`` group by Arrow, costliest first: one entry per
    group, not per resource (a 50 M-line month bills ~67,000), except under ``--by device``."""
    if not never.num_rows:
        return []
    key = decoded(never["resource_id" if by == "device" else by])
    if by != "device":
        filled = pc.fill_null(key, "")
        key = pc.if_else(pc.equal(filled, ""), UNKNOWN, filled)
    total = pc.ScalarAggregateOptions(skip_nulls=True, min_count=0)
    frame = pa.table({"key": key, "gpu_hours": never["gpu_hours"], "cost": never["cost"]})
    sums = (
        frame.group_by("key")
        .aggregate([("key", "count", pc.CountOptions(mode="all")), ("gpu_hours", "sum", total), ("cost", "sum", total)])
        .to_pandas()
        .sort_values(["cost_sum", "key"], ascending=[False, True], kind="stable")
    )
    return [
        {"key": str(k), "resources": int(n), "gpu_hours": float(h), "cost": float(c)}
        for k, n, h, c in zip(sums["key"], sums["key_count"], sums["gpu_hours_sum"], sums["cost_sum"], strict=True)
    ]


def waste_reports_by(
    usage: pd.DataFrame,
    by: Sequence[GroupBy],
    *,
    rates: pa.Table | None = None,
    fleet: Fleet | None = None,
    price_per_gpu_hour: float | None = None,
    histogram: UtilHistogram | None = None,
    span_hours: float | None = None,
) -> dict[str, WasteReport]:
    """Idle hours and dollars per group (each way in ``by``), the unobserved paid capacity, and the distribution.

    ``usage`` has :data:`USAGE_COLUMNS` (hours); ``rates`` are the month's
    :func:`~finops_cli.report.waste_rates.resource_rates_table`; devices neither prices are priced at ``fleet``'s
    substrate price, else ``price_per_gpu_hour``. ``span_hours`` gives the coverage when there is no billing.
    Every device is priced once; each grouping is a pass over the priced rows.
    """
    for group in by:
        if group not in GROUP_BYS:
            raise ValueError(f"by must be one of {', '.join(GROUP_BYS)}")
    u, billed, currency = _priced_usage(usage, rates, fleet, price_per_gpu_hour)
    return {group: _grouped(u, billed, currency, group, histogram, span_hours) for group in by}


@dataclass
class _Billed:
    """What the grouped reports need of the billed resources: the ones the trace never saw (Arrow rows), the
    billed GPU-hours, and which usage rows a billed resource covers."""

    never: pa.Table
    paid: float
    observed: np.ndarray


def _named(values: pd.Series) -> pd.Series:
    """Non-empty strings kept, anything else :data:`UNKNOWN`."""
    return values.where(values.map(lambda v: isinstance(v, str) and v != ""), UNKNOWN)


def _priced_usage(
    usage: pd.DataFrame, rates: pa.Table | None, fleet: Fleet | None, price_per_gpu_hour: float | None
) -> tuple[pd.DataFrame, _Billed | None, str]:
    """``usage`` with each row's rate, its source, substrate, instance type and team; the billed resources
    (None when there are none); the currency."""
    table = rates if rates is not None else empty_rates()
    u = usage.copy()
    u["resource_key"] = u["resource_id"].where(u["resource_id"].notna(), u["host"]).map(resource_key)
    seen = pa.array(sorted(set(u["resource_key"].dropna())), pa.string())  # the trace's few thousand resources
    hits = pd.DataFrame(columns=["substrate", "usd_per_gpu_hour", "instance_type", "team"], dtype=object)
    billed: _Billed | None = None
    currency_seen: str | None = None
    if table.num_rows:
        keys = table["resource_key"]
        traced = pc.is_in(keys, value_set=seen)
        # the first row per key (rates are sorted by resource id), looked up per usage row
        hits = table.filter(traced).to_pandas().drop_duplicates("resource_key").set_index("resource_key")
        never = table.filter(pc.invert(traced)).select(
            ["resource_id", "team", "substrate", "instance_type", "gpu_hours", "cost"]
        )
        usage_keys = pa.array(u["resource_key"].to_numpy(dtype=object), pa.string(), from_pandas=True)
        observed = pc.is_in(usage_keys, value_set=keys).to_numpy(zero_copy_only=False)
        billed = _Billed(never, float(pc.sum(table["gpu_hours"]).as_py() or 0.0), observed)
        currencies = pc.drop_null(table["currency"])
        currency_seen = str(currencies[0].as_py()) if len(currencies) else None
    substrate_price = {
        s.id: float(s.price_per_gpu_hour) + float(s.committed_per_gpu_hour or 0.0)
        for s in (fleet.substrates if fleet is not None else [])
        if s.price_per_gpu_hour is not None
    }
    currency = currency_seen or (fleet.currency if fleet is not None else "USD")
    if fleet is not None and fleet.currency != currency:
        # fleet prices fill in where billing has none: never sum two currencies into one idle cost.
        raise InputError(
            f"fleet.yaml's currency is {fleet.currency} but the billing in the store is in {currency};"
            " amounts in different currencies are never mixed (use a fleet in the bill's currency)",
            where="currency",
        )

    # Each row's rate from the first source that knows it: billing, the fleet's substrate, the flag.
    hit = hits.reindex(u["resource_key"].to_numpy(dtype=object)).set_axis(u.index).astype(object)
    substrate = hit["substrate"].where(hit["substrate"].notna(), None)
    if fleet is not None:
        unmatched = substrate.isna()
        substrate[unmatched] = [
            fleet_substrate_for(fleet, rid, host)
            for rid, host in zip(u.loc[unmatched, "resource_id"], u.loc[unmatched, "host"], strict=True)
        ]
    from_bill = np.isfinite(hit["usd_per_gpu_hour"].to_numpy(dtype=float))
    from_fleet = ~from_bill & substrate.isin(list(substrate_price)).to_numpy()
    fallback = ("flag", float(price_per_gpu_hour)) if price_per_gpu_hour is not None else ("none", math.nan)
    u["usd_per_gpu_hour"] = np.select(
        [from_bill, from_fleet],
        [hit["usd_per_gpu_hour"].to_numpy(dtype=float), substrate.map(substrate_price).to_numpy(dtype=float)],
        fallback[1],
    )
    u["price_source"] = np.select([from_bill, from_fleet], ["billing", "fleet"], fallback[0]).astype(object)
    u["substrate"] = _named(substrate)
    u["instance_type"] = _named(hit["instance_type"])
    u["team"] = u["team"].where(u["team"].map(lambda v: isinstance(v, str) and v != ""), _named(hit["team"]))
    u["device"] = u["device_id"]
    u["device_hours"] = u["device_hours"].astype(float)
    u["busy_hours"] = u["busy_hours"].astype(float)
    u["idle_hours"] = u["device_hours"] - u["busy_hours"]
    u["idle_cost"] = u["usd_per_gpu_hour"] * u["idle_hours"]
    u["cost"] = u["usd_per_gpu_hour"] * u["device_hours"]
    return u, billed, currency


def _idle(g: pd.DataFrame) -> dict[str, Any]:
    """One group's (or the whole table's) devices, hours and idle dollars (None when no device is priced)."""
    dh, bh = float(g["device_hours"].sum()), float(g["busy_hours"].sum())
    priced = g["idle_cost"].notna()
    return {
        "devices": int(g["device_id"].nunique()),
        "device_hours": dh,
        "busy_hours": bh,
        "idle_hours": dh - bh,
        "idle_fraction": (dh - bh) / dh if dh else 0.0,
        "idle_cost": float(g.loc[priced, "idle_cost"].sum()) if priced.any() else None,
        "cost": float(g.loc[priced, "cost"].sum()) if priced.any() else None,
    }


def _grouped(
    u: pd.DataFrame,
    billed: _Billed | None,
    currency: str,
    by: GroupBy,
    histogram: UtilHistogram | None,
    span_hours: float | None,
) -> WasteReport:
    """One grouping of the priced usage rows (:func:`_priced_usage`)."""
    groups = [{"key": str(key), **_idle(g)} for key, g in u.groupby(by, sort=True)]
    groups.sort(key=lambda r: -(r["idle_cost"] or 0.0))
    t = _idle(u)
    unobserved: list[dict[str, Any]] = []
    unobs_h: float = 0
    unobs_cost: float = 0
    if billed is not None:
        # paid capacity the trace never saw, summed per group (one entry per resource only under --by device)
        unobs_h, unobs_cost = (sum(billed.never[c].to_numpy().tolist()) for c in ("gpu_hours", "cost"))
        unobserved = unobserved_groups(billed.never, by)
        paid = billed.paid
        observed_paid = float(u.loc[billed.observed, "device_hours"].sum())
        coverage = min(observed_paid, paid) / paid if paid else None
        coverage_basis = "billed GPU-hours"
    else:
        coverage = t["device_hours"] / span_hours if span_hours else None
        coverage_basis = "trace span"
    dh, bh = t["device_hours"], t["busy_hours"]
    totals = {
        "devices": t["devices"],
        "samples": int(u["samples"].fillna(0).sum()),
        **{k: t[k] for k in ("device_hours", "busy_hours", "idle_hours", "idle_fraction")},
        "mean_utilization": bh / dh if dh else 0.0,
        "idle_cost": t["idle_cost"],
        "cost": t["cost"],
        "unpriced_device_hours": float(u.loc[u["idle_cost"].isna(), "device_hours"].sum()),
        "unobserved_gpu_hours": unobs_h,
        "unobserved_cost": unobs_cost,
        "coverage": coverage,
        "coverage_basis": coverage_basis,
    }
    return WasteReport(
        by=by,
        currency=currency,
        totals=totals,
        groups=groups,
        unobserved=unobserved,
        distribution={
            "samples": histogram.n if histogram else None,
            "share_at_zero": histogram.share_at_zero() if histogram else None,
            "deciles": histogram.deciles() if histogram else [],
        },
        priced_by={
            s: float(u.loc[u["price_source"] == s, "device_hours"].sum()) for s in ("billing", "fleet", "flag", "none")
        },
        baseline={
            "philly_mean_utilization": PHILLY_MEAN_UTILIZATION,
            "fleet_mean_utilization": totals["mean_utilization"],
            "reference": PHILLY_REFERENCE,
        },
    )


def billed_gpu_report(billing: pd.DataFrame, *, fleet: Fleet | None = None, by: GroupBy = "team") -> WasteReport:
    """Billed GPU spend and GPU-hours per group, for a month with billing but no utilisation trace.

    ``billing`` is :data:`finops_cli.store.queries.RESOURCE_COSTS`'s result. What the bill says, nothing more:
    GPU-hours, BilledCost, EffectiveCost and EffectiveCost ÷ GPU-hours of every resource that billed GPU-hours;
    idle stays ``None`` (nobody measured it). GPU lines with no ResourceId are kept, each on its own (grouped as
    :data:`NO_RESOURCE_ID` under ``by="device"``), so the totals are the bill's.
    """
    if by not in GROUP_BYS:
        raise ValueError(f"by must be one of {', '.join(GROUP_BYS)}")
    b = billing.copy() if billing is not None else pd.DataFrame()
    orphan_lines = 0
    if len(b):
        orphan = b["ResourceId"].isna() & (b["gpu_hours"].fillna(0.0).astype(float) > 0)
        orphan_lines = int(b.loc[orphan, "lines"].sum()) if "lines" in b else int(orphan.sum())
        b["ResourceId"] = b["ResourceId"].astype(object)
        b.loc[orphan, "ResourceId"] = [f"{NO_RESOURCE_ID} #{i}" for i in range(int(orphan.sum()))]
    rates = resource_rates(b, fleet)
    currency = (
        str(rates["currency"].dropna().iloc[0])
        if len(rates) and rates["currency"].notna().any()
        else (fleet.currency if fleet is not None else "USD")
    )
    identified = ~rates["resource_id"].str.startswith(NO_RESOURCE_ID)
    r = rates.assign(
        device=rates["resource_id"].where(identified, NO_RESOURCE_ID),
        team=rates["team"].fillna(UNKNOWN),
        substrate=rates["substrate"].fillna(UNKNOWN),
        instance_type=rates["instance_type"].fillna(UNKNOWN),
        identified=identified,
    )

    def row(g: pd.DataFrame, key: str) -> dict[str, Any]:
        gh, eff, billed = float(g["gpu_hours"].sum()), float(g["cost"].sum()), float(g["billed_cost"].sum())
        return {
            "key": key,
            "resources": int(g["identified"].sum()),
            "gpu_hours": gh,
            "billed_cost": billed,
            "effective_cost": eff,
            "effective_per_gpu_hour": eff / gh if gh else None,
            "idle_hours": None,
            "idle_cost": None,
        }

    groups = [row(g, str(key)) for key, g in r.groupby(by, sort=True)]
    groups.sort(key=lambda x: (-x["effective_cost"], x["key"]))
    totals = {**row(r, "Total"), "instance_types": sorted(set(r["instance_type"]))}
    del totals["key"]
    notes = [IDLE_NEEDS_UTILISATION]
    if not len(r):
        notes.insert(0, "no billing line of this month carries GPU-hours (x_GpuHours)")
    orphans = r[~r["identified"]]
    if len(orphans):
        notes.append(
            f"{orphan_lines} GPU line(s) have no ResourceId ({float(orphans['gpu_hours'].sum()):,.0f} GPU-hours); "
            "they are counted, not attributable to a device"
        )
    return WasteReport(
        by=by,
        currency=currency,
        totals=totals,
        groups=groups,
        unobserved=[],
        distribution={"samples": None, "share_at_zero": None, "deciles": []},
        priced_by={},
        baseline={"philly_mean_utilization": PHILLY_MEAN_UTILIZATION, "reference": PHILLY_REFERENCE},
        basis="billing",
        notes=notes,
    )


def _billed_markdown(report: WasteReport) -> str:
    t, cur = report.totals, report.currency

    def cells(g: dict[str, Any]) -> list[str]:
        amounts = [money(g["billed_cost"], cur), money(g["effective_cost"], cur)]
        return [number(g["gpu_hours"]), *amounts, unit_price(g["effective_per_gpu_hour"], cur)]

    headers = [report.by, "resources", "GPU-hours", "billed (BilledCost)", "amortised (EffectiveCost)", "per GPU-h"]
    rows = [[g["key"], str(g["resources"]), *cells(g)] for g in report.groups]
    table = md_table(headers, rows, left_then_right(1, 5), trusted=[False, *[True] * 5])
    lines = [
        f"## Billed GPU spend — {t.get('month', '')}",
        "",
        f"{number(t['gpu_hours'])} GPU-hours billed: {money(t['billed_cost'], cur)} as billed (BilledCost), "
        f"{money(t['effective_cost'], cur)} amortised (EffectiveCost). Idle is not measured.",
        "",
        table + "\n| " + " | ".join(["**Total**", str(t["resources"]), *cells(t)]) + " |",
        "",
    ]
    return "\n".join(lines + [f"- {md_text(n, None)}." for n in report.notes]) + "\n"


def to_markdown(report: WasteReport) -> str:
    """The waste report as GitHub markdown (untrusted keys escaped)."""
    if report.basis == "billing":
        return _billed_markdown(report)
    t, cur = report.totals, report.currency

    def cells(g: dict[str, Any]) -> list[str]:
        hours = [f"{g[k]:,.0f}" for k in ("device_hours", "busy_hours", "idle_hours")]
        return [*hours, pct(g["idle_fraction"]), money(g["idle_cost"], cur)]

    rows = [[g["key"], *cells(g)] for g in report.groups]
    if report.unobserved:
        unobserved_hours = f"{t['unobserved_gpu_hours']:,.0f}"
        rows.append(
            [UNOBSERVED + " paid, never sampled", unobserved_hours, "—", "—", "—", money(t["unobserved_cost"], cur)]
        )
    headers = [report.by, "GPU-hours", "busy h", "idle h", "idle %", "idle $"]
    table = md_table(headers, rows, left_then_right(1, 5), trusted=[False, *[True] * 5])
    lines = [
        f"## Idle GPU waste — {t.get('month', '')}",
        "",
        f"**{pct(t['idle_fraction'])} idle** over {t['device_hours']:,.0f} observed GPU-hours "
        f"({t['devices']} GPUs): {money(t['idle_cost'], cur)} paid for idle time. "
        f"Mean utilisation {pct(t['mean_utilization'])} vs the ~52 % Philly baseline[^philly]. "
        f"Coverage {pct(t['coverage'])} of {t['coverage_basis']}.",
        "",
        table + "\n| **Total** | " + " | ".join(cells(t)) + " |",
    ]
    d = report.distribution
    if d.get("deciles"):
        deciles = ", ".join(f"{x * 100:.0f}%" for x in d["deciles"])
        lines += ["", f"Samples at 0 %: {pct(d['share_at_zero'])}. Utilisation deciles (p10…p90): {deciles}."]
    priced = ", ".join(f"{k} {v:,.0f} h" for k, v in report.priced_by.items() if v)
    lines += [
        "",
        f"Cost per GPU-hour from: {priced or 'nothing'} (billing EffectiveCost ÷ GPU-hours, else fleet, "
        "else `price_per_gpu_hour`).",
        "",
        f"[^philly]: {PHILLY_REFERENCE}.",
    ]
    return "\n".join(lines) + "\n"
