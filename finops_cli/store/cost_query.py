"""``finops costs``: the grouping and filters a user asked for, as the slots and parameters of the store's
queries (:data:`~finops_cli.store.queries.COST_GROUPS` and its neighbours). Grouped expressions come from
:data:`DIMENSIONS`, the billing schema's own columns, or tag paths passed as parameters: every value a user typed
is a ``$parameter``, never spliced into SQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from finops_cli.schema.billing import BILLING_SCHEMA, GPU_LINE_SQL
from finops_cli.schema.utilization import STORE_SCHEMA
from finops_cli.store import engine
from finops_cli.store.engine import json_path
from finops_cli.store.queries import (
    ACTUAL_COST_ONLY,
    COST_GROUPS,
    LATEST_BILLED_GPU_MONTH,
    LATEST_BILLED_GPU_MONTH_HOURLY,
    MONTH_COVERAGE,
    USAGE_GROUPS,
)
from finops_cli.store.store import Store

#: user-facing dimension → billing column (anything else is a tag key, e.g. ``team``)
DIMENSIONS: dict[str, str] = {
    "month": "billing_period",
    "provider": "provider",
    "account": "BillingAccountId",
    "region": "RegionId",
    "instance_type": "x_InstanceType",
    "pricing_category": "PricingCategory",
    "resource": "ResourceId",
    "service": "ServiceName",
}
#: a group whose dimension is empty on the line (no tag, no region) is reported under this key
NONE = "(none)"


def _tag_expr(param: str) -> str:
    return f"CASE WHEN json_valid(Tags) THEN json_extract_string(Tags, ${param}) END"


def cost_groups(
    store: Store,
    columns: Sequence[str],
    *,
    where: Mapping[str, Sequence[str]] | None = None,
    months: Sequence[str] | None = None,
    gpu_only: bool = True,
) -> pd.DataFrame | None:
    """Σ BilledCost, Σ EffectiveCost, Σ x_GpuHours and lines per ``columns`` × currency, and the GPU lines' costs
    among them; None when the store has no billing.

    ``columns``: dimension names (:data:`DIMENSIONS`), billing columns, or tag keys; group values are strings,
    empty ones :data:`NONE`. ``where``: name → accepted values (``(none)`` selects empty ones). ``months``: the
    billing periods to read (None: all). ``gpu_only``: only GPU lines.
    """
    params: dict[str, Any] = {"none": NONE}
    raw = set(BILLING_SCHEMA.names) | {"provider", "billing_period"}

    def expr(name: str) -> str:
        col = DIMENSIONS.get(name, name if name in raw else None)
        if col is not None:
            return f"CAST({engine.quote_identifier(col)} AS VARCHAR)"
        key = f"tag{len(params)}"
        params[key] = json_path(name)
        return _tag_expr(key)

    groups = "".join(f'COALESCE({expr(c)}, $none) AS "g{i}", ' for i, c in enumerate(columns))
    conds = ["TRUE"]
    if gpu_only:
        conds.append(GPU_LINE_SQL)
    if months:
        conds.append(f"billing_period IN ({_params(params, 'm', months)})")
    for name, values in (where or {}).items():
        conds.append(f"COALESCE({expr(name)}, $none) IN ({_params(params, 'w', [str(v) for v in values])})")
    frame = engine.run_pandas(store, COST_GROUPS, params, groups=groups, conditions=" AND ".join(conds))
    if frame is None:
        return None
    return frame.rename(columns={f"g{i}": c for i, c in enumerate(columns)})


def _params(params: dict[str, Any], prefix: str, values: Sequence[str]) -> str:
    """Add ``values`` as new parameters; return their ``$name, …`` list for an ``IN (…)``."""
    names = []
    for v in values:
        key = f"{prefix}{len(params)}"
        params[key] = v
        names.append(f"${key}")
    return ", ".join(names)


def usage_groups(store: Store, column: str, months: Sequence[str]) -> pd.DataFrame | None:
    """Busy and device GPU-hours per value of utilisation ``column`` (e.g. ``team``) over ``months``; None when the
    store has none for those months or utilisation carries no such column."""
    if not months or column not in set(STORE_SCHEMA.names) - {"timestamp", "interval_s", "utilization"}:
        return None
    params: dict[str, Any] = {}
    listed = _params(params, "m", list(months))
    frame = engine.run_pandas(store, USAGE_GROUPS, params, column=engine.quote_identifier(column), months=listed)
    return None if frame is None or frame.empty else frame


def month_coverage(store: Store, months: Sequence[str], *, gpu_only: bool = True) -> pd.DataFrame | None:
    """Per billing period in ``months``: ``lines``, ``days`` (distinct UTC days charge periods start on),
    ``first_start`` and ``last_end`` of the GPU lines (every line unless ``gpu_only``)."""
    params: dict[str, Any] = {}
    conds = [f"billing_period IN ({_params(params, 'm', list(months))})"]
    if gpu_only:
        conds.append(GPU_LINE_SQL)
    return engine.run_pandas(store, MONTH_COVERAGE, params, conditions=" AND ".join(conds))


def actual_cost_notes(store: Store, months: Sequence[str]) -> list[str]:
    """One sentence per provider × period × currency of ``months`` whose effective cost rests on an actual-cost
    export without its amortised counterpart (:data:`~finops_cli.store.queries.ACTUAL_COST_ONLY`)."""

    if not months or not store.has("billing"):
        return []
    params: dict[str, Any] = {}
    listed = _params(params, "m", list(months))
    frame = engine.run_pandas(store, ACTUAL_COST_ONLY, params, months=listed)
    out = []
    for r in [] if frame is None else frame.to_dict("records"):
        bought = (
            f"commitment purchases of {r['currency']} {float(r['purchases']):,.2f} billed up front"
            if r["purchase_lines"]
            else "commitment-covered usage billed at 0"
        )
        out.append(
            f"{r['provider']} {r['month']}: effective cost rests on an actual-cost export without its amortised "
            f"counterpart ({bought}; EffectiveCost leaves the commitment out): ingest the amortised export for "
            "effective cost"
        )
    return out


def latest_usage_months(store: Store) -> tuple[str | None, str | None]:
    """The latest billing period with GPU-hours > 0 (non-GPU lines never decide the month) and the latest month
    with utilisation samples; None where the store has neither."""
    billed = None
    if store.has("billing"):
        hourly = store.has_aggregate("billing_hourly")
        table = engine.run(store, LATEST_BILLED_GPU_MONTH_HOURLY if hourly else LATEST_BILLED_GPU_MONTH)
        month = table.column("month")[0].as_py() if table is not None and table.num_rows else None
        billed = None if month is None else str(month)
    months = store.partition_values("utilization", "month") if store.has("utilization") else []
    return billed, months[-1] if months else None
