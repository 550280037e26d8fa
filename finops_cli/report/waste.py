"""Idle GPU waste: what the fleet paid for while its GPUs sat idle.

Pure metrics (tables in, a :class:`WasteReport` out); :func:`finops_cli.api.waste` reads the store.

For each device (one GPU) the trace gives samples of a busy fraction ``u`` each standing for an interval
``Δt`` (inferred at ingest; gaps are not counted):

.. math::

    \\text{device hours} = \\sum Δt, \\quad \\text{busy hours} = \\sum u·Δt, \\quad
    \\text{idle hours} = \\text{device hours} − \\text{busy hours}

    \\text{idle \\$} = \\sum_\\text{devices} c · \\text{idle hours}

where ``c`` is the device's cost per GPU-hour, taken from the first source that knows it:

1. **billing**: ``Σ EffectiveCost ÷ Σ x_GpuHours`` of the billing lines with the device's ResourceId
   (amortised, so a prepaid reservation costs what it costs per hour whether used or not);
2. **fleet**: ``price_per_gpu_hour + committed_per_gpu_hour`` of the device's substrate in ``fleet.yaml``
   (the substrate comes from the device's billing lines, else a substrate whose ``match.ResourceId`` or
   ``match.host`` names the device's resource or host);
3. **flag**: ``--price-per-gpu-hour``;
4. none: the idle hours are reported, the dollars are not (``unpriced_device_hours``).

Paid capacity with no samples at all (billed GPU-hours of resources the trace never saw) is reported on
its own line, *unobserved*: neither idle nor busy, because nobody measured it.

A mean hides a fleet where most GPUs sit at zero while a few run hot, so the report carries the
distribution too: the share of samples at exactly 0 % and the deciles of sample utilisation.

References
----------
Jeon, M., Venkataraman, S., Phanishayee, A., Qian, J., Xiao, W., Yang, F. "Analysis of Large-Scale
Multi-Tenant GPU Clusters for DNN Training Workloads." USENIX ATC 2019 (Microsoft Philly traces: ~52 %
average GPU utilisation). https://www.usenix.org/conference/atc19/presentation/jeon
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.errors import InputError
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

#: columns of the per-device usage table :func:`waste_report` takes (one row per device × team × workload)
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
    """Streaming histogram of sample utilisation (0–1) in 1000 bins, plus an exact count of zeros.

    Deciles come out to within 0.1 percentage point without holding every sample.
    """

    bins: int = 1000
    counts: np.ndarray = field(default_factory=lambda: np.zeros(1000, dtype=np.int64))
    zeros: int = 0
    n: int = 0

    def add(self, values: np.ndarray) -> None:
        v = np.asarray(values, dtype=float)
        v = v[np.isfinite(v)]
        self.n += len(v)
        self.zeros += int((v == 0).sum())
        idx = np.clip((v * self.bins).astype(np.int64), 0, self.bins - 1)
        self.counts += np.bincount(idx, minlength=self.bins)

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
        cum = np.cumsum(self.counts)
        out = []
        for q in np.arange(1, 10) / 10:
            i = int(np.searchsorted(cum, q * self.n, side="left"))
            out.append(0.0 if (self.zeros >= q * self.n) else round(min(i, self.bins - 1) / self.bins, 4))
        return out


@dataclass
class WasteReport:
    """Totals, groups, unobserved paid capacity and the utilisation distribution."""

    by: str
    currency: str
    totals: dict[str, Any]
    groups: list[dict[str, Any]]
    unobserved: list[dict[str, Any]]
    distribution: dict[str, Any]
    priced_by: dict[str, float]
    baseline: dict[str, Any]
    #: ``"utilisation"`` (idle measured from a trace) or ``"billing"`` (billed GPU spend only: idle unknown)
    basis: str = "utilisation"
    notes: list[str] = field(default_factory=list)
    #: why this month (the default-month rule's reason, or ``month`` given), for stderr
    month_reason: str = "`month`"

    def to_dict(self) -> dict[str, Any]:
        return {
            "basis": self.basis,
            "notes": self.notes,
            "by": self.by,
            "currency": self.currency,
            "totals": self.totals,
            "groups": self.groups,
            "unobserved": self.unobserved,
            "distribution": self.distribution,
            "priced_by": self.priced_by,
            "baseline": self.baseline,
        }


# ----------------------------------------------------------------------------------------- billing
def usage_from_groups(groups: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """The :data:`USAGE_COLUMNS` table and the observed span from the store's per-device groups.

    ``groups`` is :data:`finops_cli.store.queries.WASTE_DEVICE_USAGE`'s result (one row per device × team ×
    workload, with each group's first/last sample time and longest interval).
    ``span = Σ_devices (last − first sample + longest interval)``, in hours.
    """
    usage = groups[USAGE_COLUMNS].reset_index(drop=True)
    sp = groups.groupby("device_id", dropna=False).agg(
        first=("first_ts", "min"), last=("last_ts", "max"), interval=("max_interval_s", "max")
    )
    span_hours = float(((sp["last"] - sp["first"]).dt.total_seconds() + sp["interval"]).sum() / 3600.0)
    return usage, span_hours


#: :func:`resource_rates`' columns, in order
RATE_COLUMNS = [
    "resource_id", "provider", "region", "instance_type", "accelerator", "pricing_category", "team",
    "substrate", "gpu_hours", "cost", "billed_cost", "usd_per_gpu_hour", "currency",
]  # fmt: skip
#: attribute columns of :data:`finops_cli.store.queries.RESOURCE_COSTS` → their names in the rates
_RATE_ATTRIBUTES = {
    "provider": "provider",
    "RegionId": "region",
    "x_InstanceType": "instance_type",
    "x_AcceleratorType": "accelerator",
    "PricingCategory": "pricing_category",
    "team": "team",
    "substrate": "substrate",
    "BillingCurrency": "currency",
}
#: what :func:`resource_rates_table` sums per resource
_SUMS = ("gpu_hours", "cost", "billed_cost")
#: resource keys normalised per batch (Python strings for one batch at a time, not for every resource)
_KEY_BATCH = 8192


def resource_rates_table(costs: pa.Table | pd.DataFrame | None, fleet: Fleet | None = None) -> pa.Table:
    """Per billed GPU resource: paid GPU-hours, EffectiveCost (amortised), BilledCost and cost per GPU-hour,
    as an Arrow table (one row per resource, sorted by ResourceId).

    .. math:: c_r = \\frac{\\sum_{lines\\,of\\,r} \\text{EffectiveCost}}{\\sum_{lines\\,of\\,r} \\text{x\\_GpuHours}}

    ``costs`` is :data:`finops_cli.store.queries.RESOURCE_COSTS`'s result: the month's lines summed per
    resource and the attributes that describe and match it (``gpu_hours``, ``cost``, ``lines``). Groups
    are matched to the fleet's substrates (:func:`~finops_cli.core.baseline.match_billing`); where a
    resource's lines disagree on an attribute, the group with the most GPU-hours (then cost) that has a value
    names it. Only resources with GPU-hours are kept. Columns: :data:`RATE_COLUMNS` (``billed_cost`` null
    when the input has no such column) and ``resource_key`` (:func:`resource_key`).

    Columnar on purpose: a month of 50 M lines bills ~67,000 resources, and the waste report needs the
    rows of the few thousand the trace saw; the rest are summed per group (:func:`unobserved_groups`), so
    the per-resource work costs Arrow buffers, not a pandas frame and Python objects per resource.
    """
    if costs is None:
        return _empty_rates()
    t = costs if isinstance(costs, pa.Table) else pa.Table.from_pandas(costs, preserve_index=False)
    if not t.num_rows or "ResourceId" not in t.column_names:
        return _empty_rates()
    if t["ResourceId"].null_count:
        t = t.filter(pc.is_valid(t["ResourceId"]))
        if not t.num_rows:
            return _empty_rates()
    substrate = _substrates(t, fleet) if fleet is not None else pa.nulls(t.num_rows, pa.string())
    kept = ("ResourceId", *_RATE_ATTRIBUTES, *_SUMS)
    t = t.select([c for c in kept if c in t.column_names])
    t = t.append_column("substrate", substrate)
    # Each resource's groups in a run, its largest (GPU-hours, then cost) first: reduced with numpy over the
    # run boundaries, taking from the unsorted columns through the sort order (no sorted copy of the table,
    # and no hash aggregation: Arrow's held ~85 MB for the 67,000 resources of a 50 M-line month).
    ids = _decoded(t["ResourceId"]).cast(pa.string())
    keys = pa.table({"id": ids, "gpu_hours": t["gpu_hours"], "cost": t["cost"]})
    order = pc.sort_indices(keys, [("id", "ascending"), ("gpu_hours", "descending"), ("cost", "descending")])
    at = order.to_numpy()
    ids = ids.combine_chunks().take(order)
    n = len(ids)
    change = pc.not_equal(ids.slice(1), ids.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.concatenate(([True], change)))
    sums: dict[str, np.ndarray] = {}
    for c in _SUMS:
        if c in t.column_names:
            values = t[c].cast(pa.float64()).to_numpy()[at]
            sums[c] = np.add.reduceat(np.where(np.isnan(values), 0.0, values), starts)  # NaN skipped, as pandas
    keep = sums["gpu_hours"] > 0  # resources with GPU-hours only
    ends = np.append(starts[1:], n)[keep]
    starts = starts[keep]
    out: dict[str, pa.Array] = {"resource_id": ids.take(pa.array(starts))}
    for src, name in _RATE_ATTRIBUTES.items():
        if src not in t.column_names:
            out[name] = pa.nulls(len(starts), pa.string())
            continue
        column = t[src].combine_chunks()
        if pa.types.is_null(column.type):  # no value at all (a pandas column of None)
            column = column.cast(pa.string())
        valid = np.flatnonzero(column.is_valid().to_numpy(zero_copy_only=False)[at])  # sorted positions
        j = np.searchsorted(valid, starts)  # each resource's first group with a value, if it has one
        row = valid[np.minimum(j, len(valid) - 1)] if len(valid) else np.zeros(len(starts), dtype=np.int64)
        found = (j < len(valid)) & (row < ends)
        out[name] = column.take(pa.array(at[row], mask=~found))
    out |= {c: pa.array(sums[c][keep]) if c in sums else pa.nulls(len(starts), pa.float64()) for c in _SUMS}
    out["usd_per_gpu_hour"] = pc.divide(out["cost"], out["gpu_hours"])
    return _with_keys(pa.table(out).select(RATE_COLUMNS))


def _substrates(groups: pa.Table, fleet: Fleet) -> pa.Array:
    """:func:`~finops_cli.core.baseline.match_billing` of each group, matched once per distinct combination of
    the columns it reads (a few dozen) rather than per group (67,000 at 50 M lines)."""
    from finops_cli.core.baseline import MATCH_COLUMNS, match_billing

    names = {c for s in fleet.substrates for c in (s.match or {})}
    read = groups.select([c for c in groups.column_names if c in MATCH_COLUMNS or c in names])
    encoded = [c.combine_chunks() for c in read.columns]
    encoded = [c if pa.types.is_dictionary(c.type) else c.dictionary_encode() for c in encoded]
    if math.prod(len(c.dictionary) + 1 for c in encoded) >= 2**62:  # codes would not fit: match every group
        return pa.array(match_billing(read.to_pandas(), fleet).to_numpy(dtype=object), pa.string())
    codes = np.zeros(groups.num_rows, dtype=np.int64)
    for column in encoded:  # one integer per combination: Σ (value's index + 1, 0 for null) × radix
        index = column.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        codes = codes * (len(column.dictionary) + 1) + index + 1
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    matched = match_billing(read.take(pa.array(first)).to_pandas(), fleet).to_numpy(dtype=object)
    return pa.array(matched, pa.string()).take(pa.array(inverse.ravel()))


def _decoded(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A dictionary column as plain values."""
    return column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column


def _empty_rates() -> pa.Table:
    numbers = {"gpu_hours", "cost", "billed_cost", "usd_per_gpu_hour"}
    schema = pa.schema([(c, pa.float64() if c in numbers else pa.string()) for c in [*RATE_COLUMNS, "resource_key"]])
    return schema.empty_table()


def _with_keys(rates: pa.Table) -> pa.Table:
    """``rates`` with ``resource_key`` (:func:`resource_key` of ``resource_id``), a batch at a time."""
    ids = rates["resource_id"].combine_chunks() if rates.num_rows else pa.array([], pa.string())
    keys = [
        pa.array([resource_key(r) for r in ids.slice(i, _KEY_BATCH).to_pylist()], pa.string())
        for i in range(0, len(ids), _KEY_BATCH)
    ]
    return rates.append_column("resource_key", pa.chunked_array(keys, pa.string()))


def resource_rates(costs: pd.DataFrame | pa.Table | None, fleet: Fleet | None = None) -> pd.DataFrame:
    """:func:`resource_rates_table` as a DataFrame with :data:`RATE_COLUMNS` (missing attributes None,
    ``billed_cost`` NaN when the input has no such column)."""
    rates = resource_rates_table(costs, fleet).select(RATE_COLUMNS).to_pandas()
    attrs = [c for c in RATE_COLUMNS if c not in ("gpu_hours", "cost", "billed_cost", "usd_per_gpu_hour")]
    rates[attrs] = rates[attrs].astype(object).where(rates[attrs].notna(), None)
    return rates


def resource_key(resource_id: object) -> str | None:
    """Normalise a resource id for matching a trace to billing lines.

    GCP billing exports name instances by their global name (``//compute.googleapis.com/projects/…``)
    while agents report ``projects/…``; Azure resource ids are case-insensitive. So: drop a leading
    ``//<service host>/``, then leading slashes, and lower-case.
    """
    if not isinstance(resource_id, str) or not resource_id:
        return None
    rid = resource_id.strip()
    if rid.startswith("//"):
        rid = rid[2:].split("/", 1)[1] if "/" in rid[2:] else rid[2:]
    return rid.lstrip("/").lower()


def _fleet_substrate_for(fleet: Fleet, resource_id: str | None, host: str | None) -> str | None:
    for s in fleet.substrates:
        match = s.match or {}
        for col, pattern in match.items():
            value = resource_id if col in ("ResourceId", "resource_id") else host if col in ("host", "Host") else None
            if value is not None and fnmatch.fnmatchcase(value, pattern):
                return s.id
    return None


# ------------------------------------------------------------------------------------------- report
def unobserved_groups(never: pa.Table, by: GroupBy) -> list[dict[str, Any]]:
    """Billed GPU resources the trace never saw, summed per ``by`` group, costliest first.

    ``never`` holds :func:`resource_rates_table` rows. One entry per group (``key``, ``resources``,
    ``gpu_hours``, ``cost``), not per resource: a month of 50 M lines bills ~67,000 resources, and a list of
    each would grow the report (and the memory that builds it) with the month; ``--by device`` still gives
    one per resource. Summed by Arrow: only the groups reach Python.
    """
    if not never.num_rows:
        return []
    column = {"team": "team", "substrate": "substrate", "instance_type": "instance_type", "device": "resource_id"}[by]
    key = _decoded(never[column])
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


def waste_report(
    usage: pd.DataFrame,
    *,
    rates: pa.Table | pd.DataFrame | None = None,
    fleet: Fleet | None = None,
    price_per_gpu_hour: float | None = None,
    by: GroupBy = "team",
    histogram: UtilHistogram | None = None,
    span_hours: float | None = None,
) -> WasteReport:
    """Idle hours and dollars per group, the unobserved paid capacity, and the distribution.

    Parameters
    ----------
    usage
        One row per device × team × workload with :data:`USAGE_COLUMNS` (hours, not seconds).
    rates
        :func:`resource_rates_table` (or :func:`resource_rates`) of the billing store (may be empty).
    fleet
        For the substrate price fallback and the ``substrate`` grouping.
    price_per_gpu_hour
        Last-resort price for devices neither billing nor the fleet prices.
    histogram
        Sample-utilisation distribution (optional).
    span_hours
        Σ over devices of (last sample − first sample + interval), for coverage when there is no billing.
    """
    return waste_reports_by(
        usage,
        (by,),
        rates=rates,
        fleet=fleet,
        price_per_gpu_hour=price_per_gpu_hour,
        histogram=histogram,
        span_hours=span_hours,
    )[by]


def waste_reports_by(
    usage: pd.DataFrame,
    by: Sequence[GroupBy],
    *,
    rates: pa.Table | pd.DataFrame | None = None,
    fleet: Fleet | None = None,
    price_per_gpu_hour: float | None = None,
    histogram: UtilHistogram | None = None,
    span_hours: float | None = None,
) -> dict[str, WasteReport]:
    """:func:`waste_report` grouped each way in ``by``: every device is priced once (the per-row part), and
    each grouping is a pass over the priced rows (the leadership report groups by team and by substrate)."""
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


def _rates_table(rates: pa.Table | pd.DataFrame | None) -> pa.Table:
    """``rates`` as :func:`resource_rates_table` rows with ``resource_key`` (a DataFrame is converted)."""
    if rates is None:
        return _empty_rates()
    if isinstance(rates, pa.Table):
        return rates if "resource_key" in rates.column_names else _with_keys(rates)
    if not len(rates):
        return _empty_rates()
    schema = _empty_rates().schema
    cols = {
        c: pa.array(rates[c].to_numpy(dtype=object), schema.field(c).type, from_pandas=True)
        if c in rates
        else pa.nulls(len(rates), schema.field(c).type)
        for c in RATE_COLUMNS
    }
    return _with_keys(pa.table(cols))


def _priced_usage(
    usage: pd.DataFrame, rates: pa.Table | pd.DataFrame | None, fleet: Fleet | None, price_per_gpu_hour: float | None
) -> tuple[pd.DataFrame, _Billed | None, str]:
    """``usage`` with each row's rate, its source, substrate, instance type and team; the billed resources
    as :class:`_Billed` (None when there are none); the currency."""
    table = _rates_table(rates)
    u = usage.copy()
    for c in USAGE_COLUMNS:
        if c not in u:
            u[c] = None
    u["resource_key"] = u["resource_id"].where(u["resource_id"].notna(), u["host"]).map(resource_key)
    seen = pa.array(sorted(set(u["resource_key"].dropna())), pa.string())  # the trace's few thousand resources
    rate_by_res: dict[str, dict[str, Any]] = {}
    billed: _Billed | None = None
    currency_seen: str | None = None
    if table.num_rows:
        keys = table["resource_key"]
        traced = pc.is_in(keys, value_set=seen)
        # one dict per traced resource (the first per key: rates are sorted by resource id), looked up per usage row
        for row in table.filter(traced).to_pylist():
            rate_by_res.setdefault(row["resource_key"], row)
        never = table.filter(pc.invert(traced)).select(
            ["resource_id", "team", "substrate", "instance_type", "gpu_hours", "cost"]
        )
        usage_keys = pa.array(u["resource_key"].to_numpy(dtype=object), pa.string(), from_pandas=True)
        observed = pc.is_in(usage_keys, value_set=keys)
        paid = pc.sum(table["gpu_hours"]).as_py() or 0.0
        billed = _Billed(never, float(paid), observed.to_numpy(zero_copy_only=False))
        currencies = pc.drop_null(table["currency"])
        currency_seen = str(currencies[0].as_py()) if len(currencies) else None
    substrate_price: dict[str, float] = {}
    if fleet is not None:
        for s in fleet.substrates:
            if s.price_per_gpu_hour is not None:
                substrate_price[s.id] = float(s.price_per_gpu_hour) + float(s.committed_per_gpu_hour or 0.0)
    currency = currency_seen or (fleet.currency if fleet is not None else "USD")
    if fleet is not None and fleet.currency != currency:
        # fleet prices fill in where billing has none: never sum two currencies into one idle cost.
        raise InputError(
            f"fleet.yaml's currency is {fleet.currency} but the billing in the store is in {currency};"
            " amounts in different currencies are never mixed (use a fleet in the bill's currency)",
            where="currency",
        )

    # Resolve each row's rate, its source, substrate, instance type and team.
    usd, source, substrate, itype, team = [], [], [], [], []
    for rid, host, tm, raw_rid in zip(u["resource_key"], u["host"], u["team"], u["resource_id"], strict=True):
        hit = rate_by_res.get(rid) if rid is not None else None
        sub = hit["substrate"] if hit is not None else None
        if sub is None and fleet is not None:
            sub = _fleet_substrate_for(fleet, raw_rid if isinstance(raw_rid, str) else None, host)
        usd_hit = hit["usd_per_gpu_hour"] if hit is not None else None
        if usd_hit is not None and math.isfinite(usd_hit):
            usd.append(float(usd_hit))
            source.append("billing")
        elif sub is not None and sub in substrate_price:
            usd.append(substrate_price[sub])
            source.append("fleet")
        elif price_per_gpu_hour is not None:
            usd.append(float(price_per_gpu_hour))
            source.append("flag")
        else:
            usd.append(math.nan)
            source.append("none")
        substrate.append(sub or UNKNOWN)
        itype.append((hit["instance_type"] if hit is not None else None) or UNKNOWN)
        team.append(tm if isinstance(tm, str) and tm else ((hit["team"] if hit is not None else None) or UNKNOWN))
    u["usd_per_gpu_hour"] = usd
    u["price_source"] = source
    u["substrate"] = substrate
    u["instance_type"] = itype
    u["team"] = team
    u["device"] = u["device_id"]
    u["device_hours"] = u["device_hours"].astype(float)
    u["busy_hours"] = u["busy_hours"].astype(float)
    u["idle_hours"] = u["device_hours"] - u["busy_hours"]
    u["idle_cost"] = u["usd_per_gpu_hour"] * u["idle_hours"]
    u["cost"] = u["usd_per_gpu_hour"] * u["device_hours"]
    return u, billed, currency


def _grouped(
    u: pd.DataFrame,
    billed: _Billed | None,
    currency: str,
    by: GroupBy,
    histogram: UtilHistogram | None,
    span_hours: float | None,
) -> WasteReport:
    """One grouping of the priced usage rows (:func:`_priced_usage`)."""
    groups: list[dict[str, Any]] = []
    for key, g in u.groupby(by, sort=True):
        dh, bh = float(g["device_hours"].sum()), float(g["busy_hours"].sum())
        priced = g["idle_cost"].notna()
        groups.append(
            {
                "key": str(key),
                "devices": int(g["device_id"].nunique()),
                "device_hours": dh,
                "busy_hours": bh,
                "idle_hours": dh - bh,
                "idle_fraction": (dh - bh) / dh if dh else 0.0,
                "idle_cost": float(g.loc[priced, "idle_cost"].sum()) if priced.any() else None,
                "cost": float(g.loc[priced, "cost"].sum()) if priced.any() else None,
            }
        )
    groups.sort(key=lambda r: -(r["idle_cost"] or 0.0))

    # Paid capacity the trace never saw, summed per group (one entry per resource only under --by device).
    unobserved: list[dict[str, Any]] = []
    unobs_h: float = 0
    unobs_cost: float = 0
    if billed is not None:
        unobs_h, unobs_cost = (
            sum(billed.never[c].to_numpy().tolist()) for c in ("gpu_hours", "cost")
        )  # in resource order, as they always were
        unobserved = unobserved_groups(billed.never, by)

    dh = float(u["device_hours"].sum())
    bh = float(u["busy_hours"].sum())
    priced = u["idle_cost"].notna()
    if billed is not None:
        paid = billed.paid
        observed_paid = float(u.loc[billed.observed, "device_hours"].sum())
        coverage = min(observed_paid, paid) / paid if paid else None
        coverage_basis = "billed GPU-hours"
    else:
        coverage = dh / span_hours if span_hours else None
        coverage_basis = "trace span"
    totals = {
        "devices": int(u["device_id"].nunique()),
        "samples": int(u["samples"].fillna(0).sum()),
        "device_hours": dh,
        "busy_hours": bh,
        "idle_hours": dh - bh,
        "idle_fraction": (dh - bh) / dh if dh else 0.0,
        "mean_utilization": bh / dh if dh else 0.0,
        "idle_cost": float(u.loc[priced, "idle_cost"].sum()) if priced.any() else None,
        "cost": float(u.loc[priced, "cost"].sum()) if priced.any() else None,
        "unpriced_device_hours": float(u.loc[~priced, "device_hours"].sum()),
        "unobserved_gpu_hours": unobs_h,
        "unobserved_cost": unobs_cost,
        "coverage": coverage,
        "coverage_basis": coverage_basis,
    }
    priced_by = {
        s: float(u.loc[u["price_source"] == s, "device_hours"].sum()) for s in ("billing", "fleet", "flag", "none")
    }
    distribution = {
        "samples": histogram.n if histogram else None,
        "share_at_zero": histogram.share_at_zero() if histogram else None,
        "deciles": histogram.deciles() if histogram else [],
    }
    baseline = {
        "philly_mean_utilization": PHILLY_MEAN_UTILIZATION,
        "fleet_mean_utilization": totals["mean_utilization"],
        "reference": PHILLY_REFERENCE,
    }
    return WasteReport(by, currency, totals, groups, unobserved, distribution, priced_by, baseline)


IDLE_NEEDS_UTILISATION = (
    "idle GPU-hours need utilisation data: run 'finops ingest utilization' with a trace of this month"
)
NO_RESOURCE_ID = "(no ResourceId)"


def billed_gpu_report(billing: pd.DataFrame, *, fleet: Fleet | None = None, by: GroupBy = "team") -> WasteReport:
    """Billed GPU spend and GPU-hours per group, for a month with billing but no utilisation trace.

    ``billing`` is :data:`finops_cli.store.queries.RESOURCE_COSTS`'s result (lines summed per resource and
    attributes, ``lines`` per group).

    What the bill says, nothing more: per group, the GPU-hours billed (``Σ x_GpuHours``), the invoice
    amount (``Σ BilledCost``) and the amortised amount (``Σ EffectiveCost``) of every line of a resource
    that billed GPU-hours, and ``EffectiveCost ÷ GPU-hours``. Idle hours and idle dollars stay ``None``:
    without samples nobody knows how busy those GPUs were. GPU lines with no ResourceId are kept (each on
    its own, grouped as :data:`NO_RESOURCE_ID` under ``by="device"``) so the totals are the bill's.
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
    r = rates.assign(
        device=rates["resource_id"].where(~rates["resource_id"].str.startswith(NO_RESOURCE_ID), NO_RESOURCE_ID),
        team=rates["team"].fillna(UNKNOWN),
        substrate=rates["substrate"].fillna(UNKNOWN),
        instance_type=rates["instance_type"].fillna(UNKNOWN),
        identified=~rates["resource_id"].str.startswith(NO_RESOURCE_ID),
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
    from finops_cli.report.escape import left_then_right, md_table, md_text
    from finops_cli.report.format import money, number, unit_price

    t, cur = report.totals, report.currency
    lines = [
        f"## Billed GPU spend — {t.get('month', '')}",
        "",
        f"{number(t['gpu_hours'])} GPU-hours billed: {money(t['billed_cost'], cur)} as billed (BilledCost), "
        f"{money(t['effective_cost'], cur)} amortised (EffectiveCost). Idle is not measured.",
        "",
    ]
    rows = [
        [g["key"], str(g["resources"]), number(g["gpu_hours"]), money(g["billed_cost"], cur),
         money(g["effective_cost"], cur), unit_price(g["effective_per_gpu_hour"], cur)]
        for g in report.groups
    ]  # fmt: skip
    headers = [report.by, "resources", "GPU-hours", "billed (BilledCost)", "amortised (EffectiveCost)", "per GPU-h"]
    table = md_table(headers, rows, left_then_right(1, 5), trusted=[False, *[True] * 5])
    table += (
        f"\n| **Total** | {t['resources']} | {number(t['gpu_hours'])} | {money(t['billed_cost'], cur)} | "
        f"{money(t['effective_cost'], cur)} | {unit_price(t['effective_per_gpu_hour'], cur)} |"
    )
    lines += [table, ""]
    lines += [f"- {md_text(n, None)}." for n in report.notes]
    return "\n".join(lines) + "\n"


def to_markdown(report: WasteReport) -> str:
    """The waste report as GitHub markdown (untrusted keys escaped)."""
    from finops_cli.report.escape import left_then_right, md_table
    from finops_cli.report.format import money, pct

    if report.basis == "billing":
        return _billed_markdown(report)
    t, cur = report.totals, report.currency
    lines = [
        f"## Idle GPU waste — {t.get('month', '')}",
        "",
        f"**{pct(t['idle_fraction'])} idle** over {t['device_hours']:,.0f} observed GPU-hours "
        f"({t['devices']} GPUs): {money(t['idle_cost'], cur)} paid for idle time. "
        f"Mean utilisation {pct(t['mean_utilization'])} vs the ~52 % Philly baseline[^philly]. "
        f"Coverage {pct(t['coverage'])} of {t['coverage_basis']}.",
        "",
    ]
    rows = [
        [
            g["key"],
            f"{g['device_hours']:,.0f}",
            f"{g['busy_hours']:,.0f}",
            f"{g['idle_hours']:,.0f}",
            pct(g["idle_fraction"]),
            money(g["idle_cost"], cur),
        ]
        for g in report.groups
    ]
    if report.unobserved:
        rows.append(
            [
                UNOBSERVED + " paid, never sampled",
                f"{t['unobserved_gpu_hours']:,.0f}",
                "—",
                "—",
                "—",
                money(t["unobserved_cost"], cur),
            ]
        )
    rows.append(
        [
            "**Total**",
            f"{t['device_hours']:,.0f}",
            f"{t['busy_hours']:,.0f}",
            f"{t['idle_hours']:,.0f}",
            pct(t["idle_fraction"]),
            money(t["idle_cost"], cur),
        ]
    )
    headers = [report.by, "GPU-hours", "busy h", "idle h", "idle %", "idle $"]
    table = md_table(headers, rows[:-1], left_then_right(1, 5), trusted=[False, True, True, True, True, True])
    table += "\n| **Total** | " + " | ".join(rows[-1][1:]) + " |"
    lines.append(table)
    d = report.distribution
    if d.get("deciles"):
        lines += [
            "",
            f"Samples at 0 %: {pct(d['share_at_zero'])}. Utilisation deciles (p10…p90): "
            + ", ".join(f"{x * 100:.0f}%" for x in d["deciles"])
            + ".",
        ]
    priced = ", ".join(f"{k} {v:,.0f} h" for k, v in report.priced_by.items() if v)
    lines += [
        "",
        f"Cost per GPU-hour from: {priced or 'nothing'} (billing EffectiveCost ÷ GPU-hours, else fleet, "
        "else --price-per-gpu-hour).",
        "",
        f"[^philly]: {PHILLY_REFERENCE}.",
    ]
    return "\n".join(lines) + "\n"
