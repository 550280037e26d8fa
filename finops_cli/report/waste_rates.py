"""Each billed GPU resource's cost per GPU-hour, from the month's bill: what prices an idle device first.

Columnar on purpose: a month of 50 M lines bills ~67,000 resources and the waste report needs the few thousand
the trace saw, so the per-resource work costs Arrow buffers, not a pandas frame and Python objects per resource.
"""

from __future__ import annotations

import fnmatch
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from finops_cli.schema.estate import Fleet

#: :func:`resource_rates_table`'s columns, in order (then ``resource_key``)
RATE_COLUMNS = [
    "resource_id", "provider", "region", "instance_type", "accelerator", "pricing_category", "team",
    "substrate", "gpu_hours", "cost", "billed_cost", "usd_per_gpu_hour", "currency",
]  # fmt: skip
_NUMBERS = ("gpu_hours", "cost", "billed_cost", "usd_per_gpu_hour")
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
    """Per billed GPU resource (sorted by ResourceId): paid GPU-hours, EffectiveCost, BilledCost and
    ``usd_per_gpu_hour = Σ EffectiveCost ÷ Σ x_GpuHours``, with :data:`RATE_COLUMNS` and ``resource_key``.

    ``costs`` is :data:`finops_cli.store.queries.RESOURCE_COSTS`'s result (lines summed per resource and
    attributes). Groups are matched to the fleet's substrates; where a resource's groups disagree on an attribute,
    the one with the most GPU-hours (then cost) that has a value names it. Only resources with GPU-hours are kept.
    """
    if costs is None:
        return empty_rates()
    t = costs if isinstance(costs, pa.Table) else pa.Table.from_pandas(costs, preserve_index=False)
    if not t.num_rows or "ResourceId" not in t.column_names:
        return empty_rates()
    if t["ResourceId"].null_count:
        t = t.filter(pc.is_valid(t["ResourceId"]))
        if not t.num_rows:
            return empty_rates()
    substrate = _substrates(t, fleet) if fleet is not None else pa.nulls(t.num_rows, pa.string())
    kept = ("ResourceId", *_RATE_ATTRIBUTES, *_SUMS)
    t = t.select([c for c in kept if c in t.column_names])
    t = t.append_column("substrate", substrate)
    # Each resource's groups in a run, its largest (GPU-hours, then cost) first: reduced with numpy over the
    # run boundaries, taking from the unsorted columns through the sort order (no sorted copy of the table,
    # and no hash aggregation: Arrow's held ~85 MB for the 67,000 resources of a 50 M-line month).
    ids = decoded(t["ResourceId"]).cast(pa.string())
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


def decoded(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A dictionary column as plain values."""
    return column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column


def empty_rates() -> pa.Table:
    fields = [(c, pa.float64() if c in _NUMBERS else pa.string()) for c in [*RATE_COLUMNS, "resource_key"]]
    return pa.schema(fields).empty_table()


def _with_keys(rates: pa.Table) -> pa.Table:
    """``rates`` with ``resource_key`` (:func:`resource_key` of ``resource_id``), a batch at a time."""
    ids = rates["resource_id"].combine_chunks() if rates.num_rows else pa.array([], pa.string())
    keys = [
        pa.array([resource_key(r) for r in ids.slice(i, _KEY_BATCH).to_pylist()], pa.string())
        for i in range(0, len(ids), _KEY_BATCH)
    ]
    return rates.append_column("resource_key", pa.chunked_array(keys, pa.string()))


def resource_rates(costs: pd.DataFrame | pa.Table | None, fleet: Fleet | None = None) -> pd.DataFrame:
    """:func:`resource_rates_table` as a DataFrame (missing attributes None, ``billed_cost`` NaN when absent)."""
    rates = resource_rates_table(costs, fleet).select(RATE_COLUMNS).to_pandas()
    attrs = [c for c in RATE_COLUMNS if c not in _NUMBERS]
    rates[attrs] = rates[attrs].astype(object).where(rates[attrs].notna(), None)
    return rates


def resource_key(resource_id: object) -> str | None:
    """A resource id normalised for matching a trace to billing lines: GCP bills ``//compute.googleapis.com/
    projects/…`` where agents report ``projects/…``, and Azure ids are case-insensitive."""
    if not isinstance(resource_id, str) or not resource_id:
        return None
    rid = resource_id.strip()
    if rid.startswith("//"):
        rid = rid[2:].split("/", 1)[1] if "/" in rid[2:] else rid[2:]
    return rid.lstrip("/").lower()


def fleet_substrate_for(fleet: Fleet, resource_id: object, host: str | None) -> str | None:
    """The first substrate whose ``match.ResourceId`` or ``match.host`` pattern names the device."""
    rid = resource_id if isinstance(resource_id, str) else None
    for s in fleet.substrates:
        for col, pattern in (s.match or {}).items():
            value = rid if col in ("ResourceId", "resource_id") else host if col in ("host", "Host") else None
            if value is not None and fnmatch.fnmatchcase(value, pattern):
                return s.id
    return None
