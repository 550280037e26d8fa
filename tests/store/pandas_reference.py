"""The pre-DuckDB pandas path, kept only as an independent reference for the engine's answers.

Each function reads whole datasets into pandas/pyarrow exactly as ``finops`` did before issue 15 and
answers the same question as one query of :mod:`finops_cli.store.queries`. The tests in
``test_engine_equivalence.py`` compare the two to the cent and GPU-hour; nothing in the package uses this.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from finops_cli.core.baseline import match_billing
from finops_cli.core.demand import Horizon
from finops_cli.report.waste import USAGE_COLUMNS, UtilHistogram
from finops_cli.report.waste_rates import empty_rates, resource_key
from finops_cli.schema.estate import Fleet
from finops_cli.store import Store

DEVICE_KEYS = ["device_id", "resource_id", "host", "team", "workload", "accelerator"]


def _decode(table: pa.Table) -> pa.Table:
    for i, fld in enumerate(table.schema):
        if pa.types.is_dictionary(fld.type):
            table = table.set_column(i, fld.name, table.column(i).cast(fld.type.value_type))
    return table


def rates_table(rates: pd.DataFrame) -> pa.Table:
    """The reference's per-resource rates as the Arrow table :func:`waste_reports_by` takes (with ``resource_key``)."""
    schema = empty_rates().schema
    rates = rates.assign(resource_key=rates["resource_id"].map(resource_key))
    return pa.Table.from_pandas(rates.reindex(columns=schema.names), schema=schema, preserve_index=False)


def _add_samples(hist: UtilHistogram, values: np.ndarray) -> None:
    """The histogram's binning done here on the samples themselves (the store does it in SQL)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    hist.n += len(v)
    hist.zeros += int((v == 0).sum())
    hist.counts += np.bincount(np.clip((v * hist.bins).astype(np.int64), 0, hist.bins - 1), minlength=hist.bins)


def device_usage(store: Store, month: str) -> tuple[pd.DataFrame, UtilHistogram, float]:
    """Utilisation per device × team × workload, the sample histogram and the span (hours), batch by batch."""
    data = store.dataset("utilization")
    assert data is not None
    cols = [*DEVICE_KEYS, "utilization", "interval_s", "timestamp"]
    partials, spans, hist = [], [], UtilHistogram()
    for batch in data.scanner(columns=cols, filter=ds.field("month") == month).to_batches():
        if batch.num_rows == 0:
            continue
        util = batch.column("utilization")
        _add_samples(hist, util.to_numpy(zero_copy_only=False))
        t = pa.table(
            {
                **{k: batch.column(k) for k in DEVICE_KEYS},
                "busy_s": pc.multiply(util, batch.column("interval_s")),
                "interval_s": batch.column("interval_s"),
                "zero": pc.cast(pc.equal(util, 0.0), pa.int64()),
                "ts": batch.column("timestamp"),
            }
        )
        sums = [("interval_s", "sum"), ("busy_s", "sum"), ("zero", "sum"), ("zero", "count")]
        partials.append(_decode(t.group_by(DEVICE_KEYS).aggregate(sums)))
        spans.append(_decode(t.group_by("device_id").aggregate([("ts", "min"), ("ts", "max"), ("interval_s", "max")])))
    agg = (
        pa.concat_tables(partials)
        .group_by(DEVICE_KEYS)
        .aggregate([("interval_s_sum", "sum"), ("busy_s_sum", "sum"), ("zero_sum", "sum"), ("zero_count", "sum")])
        .to_pandas()
    )
    usage = pd.DataFrame(
        {
            **{k: agg[k] for k in DEVICE_KEYS},
            "samples": agg["zero_count_sum"],
            "zero_samples": agg["zero_sum_sum"],
            "device_hours": agg["interval_s_sum_sum"] / 3600.0,
            "busy_hours": agg["busy_s_sum_sum"] / 3600.0,
        }
    )[USAGE_COLUMNS]
    sp = (
        pa.concat_tables(spans)
        .group_by("device_id")
        .aggregate([("ts_min", "min"), ("ts_max", "max"), ("interval_s_max", "max")])
        .to_pandas()
    )
    span = float(((sp["ts_max_max"] - sp["ts_min_min"]).dt.total_seconds() + sp["interval_s_max_max"]).sum() / 3600)
    return usage, hist, span


def _tag(tags: object, key: str) -> str | None:
    if not isinstance(tags, str) or not tags:
        return None
    try:
        return json.loads(tags).get(key)
    except (ValueError, AttributeError):
        return None


def billing_lines(store: Store, month: str | None = None) -> pd.DataFrame:
    """Every billing line (of one billing period), all columns, as pandas."""
    flt = ds.field("billing_period") == month if month else None
    table = store.read("billing", filter=flt)
    return table.to_pandas() if table is not None else pd.DataFrame()


def resource_rates(billing: pd.DataFrame, fleet: Fleet | None) -> pd.DataFrame:
    """Per resource: GPU-hours, EffectiveCost and cost per GPU-hour, one line at a time (``Tags`` via json)."""
    b = billing[billing["ResourceId"].notna()].copy()
    b["substrate"] = match_billing(b, fleet) if fleet is not None else None
    b["x_GpuHours"] = b["x_GpuHours"].fillna(0.0).astype(float)
    b["team"] = b["Tags"].map(lambda t: _tag(t, "team"))

    def first(s: pd.Series) -> Any:
        s = s.dropna()
        return s.iloc[0] if len(s) else None

    g = b.groupby("ResourceId", sort=True)
    out = pd.DataFrame(
        {
            "provider": g["provider"].agg(first),
            "region": g["RegionId"].agg(first),
            "instance_type": g["x_InstanceType"].agg(first),
            "accelerator": g["x_AcceleratorType"].agg(first),
            "pricing_category": g["PricingCategory"].agg(first),
            "team": g["team"].agg(first),
            "substrate": g["substrate"].agg(first),
            "gpu_hours": g["x_GpuHours"].sum(),
            "cost": g["EffectiveCost"].sum(),
            "currency": g["BillingCurrency"].agg(first),
        }
    )
    out = out[out["gpu_hours"] > 0].copy()
    out["usd_per_gpu_hour"] = out["cost"] / out["gpu_hours"]
    # The one fix carried over: under pandas 3 a missing team came out NaN, which is truthy, so waste_reports_by
    # grouped such devices under a NaN key that groupby then dropped (groups no longer added up to the totals).
    attrs = ["provider", "region", "instance_type", "accelerator", "pricing_category", "team", "substrate", "currency"]
    out[attrs] = out[attrs].astype(object).where(out[attrs].notna(), None)
    out.index.name = "resource_id"
    return out.reset_index()


def billed_baseline(billing: pd.DataFrame, fleet: Fleet, start: datetime, end: datetime) -> tuple[pd.Series, int, int]:
    """EffectiveCost per substrate of the lines charged in ``[start, end)``; lines matched; lines inside."""
    charge = pd.to_datetime(billing["ChargePeriodStart"], utc=True)
    inside = billing[(charge >= pd.Timestamp(start)) & (charge < pd.Timestamp(end))]
    substrate = match_billing(inside, fleet)
    matched = inside[substrate.notna()]
    cost = matched["EffectiveCost"].astype(float).groupby(substrate[substrate.notna()]).sum()
    return cost, len(matched), len(inside)


def observed_from_utilization(
    store: Store, tag: str, value: str, horizon: Horizon, quantity: str = "busy_gpu_hours"
) -> pd.DataFrame:
    """One row per matching sample: ``timestamp, end, gpu_hours, accelerator`` (whole dataset read)."""
    frame = store.read("utilization").to_pandas()
    frame = frame[frame[tag].astype(str) == value]
    seconds = frame["interval_s"].astype(float)
    busy = frame["utilization"].astype(float) if quantity == "busy_gpu_hours" else 1.0
    start = pd.to_datetime(frame["timestamp"], utc=True)
    out = pd.DataFrame(
        {
            "timestamp": start,
            "end": start + pd.to_timedelta(seconds.to_numpy(), unit="s"),
            "gpu_hours": busy * seconds / 3600,
            "accelerator": frame["accelerator"].astype(str).to_numpy(),
        }
    )
    idx = horizon.hour_index(out["timestamp"])
    return out[(idx >= 0) & (idx < horizon.hours)]


def observed_from_billing(store: Store, tag: str, value: str, horizon: Horizon) -> pd.DataFrame:
    """One row per matching line: ``timestamp, end, gpu_hours, accelerator`` (``Tags`` parsed line by line)."""
    frame = billing_lines(store)
    frame = frame[frame["Tags"].map(lambda t: _tag(t, tag) == value).astype(bool)]
    frame = frame[frame["x_GpuCount"].notna() & (frame["x_GpuCount"].astype(float) > 0)]
    start = pd.to_datetime(frame["ChargePeriodStart"], utc=True)
    end = pd.to_datetime(frame["ChargePeriodEnd"], utc=True)
    out = pd.DataFrame(
        {
            "timestamp": start,
            "end": end.where(end > start, start + pd.Timedelta(hours=1)),
            "gpu_hours": frame["ConsumedQuantity"].astype(float) * frame["x_GpuCount"].astype(float),
            "accelerator": frame["x_AcceleratorType"].astype(str).to_numpy(),
        }
    )
    idx = horizon.hour_index(out["timestamp"])
    return out[(idx >= 0) & (idx < horizon.hours)]


def observe(store: Store, tag: str, value: str, horizon: Horizon, quantity: str) -> tuple[str, pd.DataFrame, int, int]:
    """The old ``observe``: source, sample/line rows, first observed hour, end hour (exclusive)."""
    frame, source = pd.DataFrame(), ""
    if tag in ("team", "workload"):
        frame, source = observed_from_utilization(store, tag, value, horizon, quantity), "utilization"
    if frame.empty:
        frame, source = observed_from_billing(store, tag, value, horizon), "billing"
    if frame.empty:
        return "", frame, 0, 0
    first = int(horizon.hour_index(frame["timestamp"]).min())
    last = horizon.hour_index(frame["end"] - pd.Timedelta(microseconds=1))
    return source, frame.drop(columns="end"), first, int(min(last.max() + 1, horizon.hours))


def draft_numbers(store: Store, month: str, currency: str) -> tuple[dict, dict]:
    """The old draft's per-substrate numbers and billed GPU-hours per workload tag, from every line in pandas."""
    from finops_cli.estate.draft import SUBSTRATE_KEY

    lines = billing_lines(store, month)
    gpu = lines[gpu_line_mask(lines) & (lines["BillingCurrency"] == currency)]
    key = gpu[SUBSTRATE_KEY].astype(object).where(gpu[SUBSTRATE_KEY].notna(), None)
    gpu = gpu.assign(_key=list(map(tuple, key.to_numpy())))
    subs = {}
    for k, g in gpu.groupby("_key", sort=False):
        if not g["x_GpuHours"].fillna(0.0).sum() > 0:
            continue
        subs[k] = {
            "gpu_hours": float(g["x_GpuHours"].fillna(0.0).sum()),
            "effective_cost": float(g["EffectiveCost"].astype(float).sum()),
            "billed_cost": float(g["BilledCost"].astype(float).fillna(0).sum()),
            "gpus": round(peak_concurrent_gpus(g), 3),
            "lines": len(g),
        }
    tags = gpu["Tags"].map(lambda t: {k: v for k in ("workload", "team") if (v := _tag(t, k))})
    workload = tags.map(lambda t: t.get("workload") or t.get("team") or "untagged")
    return subs, gpu["x_GpuHours"].astype(float).fillna(0.0).groupby(workload).sum().to_dict()


def resource_rates_from_groups(costs: pd.DataFrame, fleet: Fleet | None) -> pd.DataFrame:
    """Per resource from ``RESOURCE_COSTS``' groups, in pandas, as ``finops`` did before the per-resource work
    moved to Arrow (issue 15): substrate per group, the largest group's (GPU-hours, then cost) first non-null
    attribute per column, sums per resource, resources with GPU-hours only."""
    cols = [
        "resource_id", "provider", "region", "instance_type", "accelerator", "pricing_category", "team",
        "substrate", "gpu_hours", "cost", "billed_cost", "usd_per_gpu_hour", "currency",
    ]  # fmt: skip
    b = costs[costs["ResourceId"].notna()]
    if b.empty:
        return pd.DataFrame(columns=cols)
    b = b.assign(substrate=match_billing(b, fleet) if fleet is not None else None)
    b = b.sort_values(["ResourceId", "gpu_hours", "cost"], ascending=[True, False, False], kind="stable")
    g = b.groupby("ResourceId", sort=True)
    names = {
        "provider": "provider", "RegionId": "region", "x_InstanceType": "instance_type",
        "x_AcceleratorType": "accelerator", "PricingCategory": "pricing_category", "team": "team",
        "substrate": "substrate", "BillingCurrency": "currency",
    }  # fmt: skip
    first = g[list(names)].first().rename(columns=names).astype(object)
    out = first.where(first.notna(), None)
    out["gpu_hours"] = g["gpu_hours"].sum().astype(float)
    out["cost"] = g["cost"].sum().astype(float)
    out["billed_cost"] = g["billed_cost"].sum().astype(float) if "billed_cost" in b else float("nan")
    out = out[out["gpu_hours"] > 0].copy()
    out["usd_per_gpu_hour"] = out["cost"] / out["gpu_hours"]
    out.index.name = "resource_id"
    return out.reset_index()[cols]


def gpu_line_mask(frame: pd.DataFrame) -> pd.Series:
    """:data:`~finops_cli.schema.billing.GPU_LINE_SQL` over a pandas frame of billing lines (True for GPU lines)."""
    hours = pd.to_numeric(frame["x_GpuHours"], errors="coerce").fillna(0.0)
    count = pd.to_numeric(frame["x_GpuCount"], errors="coerce").fillna(0.0)
    return (hours > 0) | ((count > 0) & (frame["ChargeCategory"] == "Usage"))


def peak_concurrent_gpus(lines: pd.DataFrame) -> float:
    """Highest number of GPUs billed at once: each line's GPU-hours spread evenly over its charge period.

    ``lines``: ``ChargePeriodStart``, ``ChargePeriodEnd``, ``x_GpuHours`` (one row per line). The draft itself
    gets the same events already summed per instant from the engine (:func:`~finops_cli.estate.draft.peak_from_events`);
    this is the pandas reference the tests check it against.
    """
    start = pd.to_datetime(lines["ChargePeriodStart"], utc=True)
    end = pd.to_datetime(lines["ChargePeriodEnd"], utc=True)
    hours = ((end - start).dt.total_seconds() / 3600.0).where(lambda h: h > 0, 1.0).fillna(1.0)
    rate = lines["x_GpuHours"].astype(float).fillna(0.0) / hours.to_numpy()
    end = end.where(end > start, start + pd.Timedelta(hours=1))
    events = pd.DataFrame(
        {"t": pd.concat([start, end], ignore_index=True), "d": pd.concat([rate, -rate], ignore_index=True)}
    )
    from finops_cli.estate.draft import peak_from_events

    return peak_from_events(events.groupby("t", as_index=False)["d"].sum())
