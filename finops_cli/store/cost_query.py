"""Billing spend grouped by any dimension, as one DuckDB query over the Hive-partitioned store.

The SQL (:data:`COST_GROUPS_SQL`) is a plain ``SELECT … FROM billing WHERE … GROUP BY ALL`` with ``$name``
parameters for every value a user typed (months, tag paths, filter values); the grouped expressions come
only from :data:`DIMENSIONS` or from ``json_extract_string(Tags, $tagN)``, so no user text is ever
spliced into SQL. Filters on ``billing_period`` prune whole partitions before a byte is read; what reaches
pandas is one row per group. The store's other analyses move to the same engine (``finops_cli.store``);
this module is written so its query can sit beside theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

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

COST_GROUPS_SQL = """
SELECT {select}BillingCurrency AS currency,
       sum(COALESCE(BilledCost, 0.0)) AS billed_cost,
       sum(COALESCE(EffectiveCost, 0.0)) AS effective_cost,
       sum(COALESCE(x_GpuHours, 0.0)) AS gpu_hours,
       count(*) AS lines
FROM billing
WHERE {where}
GROUP BY ALL
"""


def _tag_expr(param: str) -> str:
    return f"CASE WHEN json_valid(Tags) THEN json_extract_string(Tags, ${param}) END"


def _json_path(key: str) -> str:
    return '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def cost_groups(
    store: Store,
    columns: Sequence[str],
    *,
    where: Mapping[str, Sequence[str]] | None = None,
    months: Sequence[str] | None = None,
    gpu_only: bool = True,
) -> pd.DataFrame | None:
    """Σ BilledCost, Σ EffectiveCost, Σ x_GpuHours and line count per ``columns`` × currency.

    ``columns``: dimension names (:data:`DIMENSIONS`), raw billing column names, or tag keys. ``where``:
    name → accepted values (a line passes when its value is one of them; ``(none)`` selects empty ones).
    ``months``: billing periods to read (None: all). ``gpu_only``: only GPU lines
    (:data:`~finops_cli.schema.billing.GPU_LINE_SQL`).
    Returns None when the store has no billing; group values are strings, empty ones :data:`NONE`.
    """
    from finops_cli.schema.billing import BILLING_SCHEMA, GPU_LINE_SQL

    files = store.files("billing")
    if not files:
        return None
    params: dict[str, Any] = {}
    raw = set(BILLING_SCHEMA.names) | {"provider", "billing_period"}

    def expr(name: str) -> str:
        col = DIMENSIONS.get(name, name if name in raw else None)
        if col is not None:
            return f'CAST("{col}" AS VARCHAR)'
        key = f"tag{len(params)}"
        params[key] = _json_path(name)
        return _tag_expr(key)

    select = "".join(f'COALESCE({expr(c)}, {_lit(NONE)}) AS "g{i}", ' for i, c in enumerate(columns))
    conds = ["TRUE"]
    if gpu_only:
        conds.append(GPU_LINE_SQL)
    if months:
        names: list[str] = []
        for m in months:
            names.append(f"$m{len(names)}")
            params[names[-1][1:]] = m
        conds.append(f"billing_period IN ({', '.join(names)})")
    for name, values in (where or {}).items():
        e = f"COALESCE({expr(name)}, {_lit(NONE)})"
        names = []
        for v in values:
            key = f"w{len(params)}"
            params[key] = str(v)
            names.append(f"${key}")
        conds.append(f"{e} IN ({', '.join(names)})")
    sql = COST_GROUPS_SQL.format(select=select, where=" AND ".join(conds))
    frame = _run(store, "billing", files, sql, params)
    frame = frame.rename(columns={f"g{i}": c for i, c in enumerate(columns)})
    return frame


def _lit(text: str) -> str:
    """A SQL string literal for text we wrote ourselves (views and COALESCE defaults)."""
    return "'" + text.replace("'", "''") + "'"


USAGE_GROUPS_SQL = """
SELECT COALESCE(CAST("{column}" AS VARCHAR), {none}) AS "{column}",
       sum(COALESCE(utilization, 0.0) * interval_s) / 3600.0 AS busy_hours,
       sum(interval_s) / 3600.0 AS device_hours
FROM utilization
WHERE month IN ({months})
GROUP BY ALL
"""


def usage_groups(store: Store, column: str, months: Sequence[str]) -> pd.DataFrame | None:
    """Busy and device GPU-hours per value of utilisation ``column`` (e.g. ``team``) over ``months``.

    None when the store has no utilisation for those months or no such column.
    """
    import pyarrow.dataset as ds

    files = [p for p in store.files("utilization") if any(f"month={m}" in p.parts for m in months)]
    if not files or not months:
        return None
    schema = ds.dataset([store.locate(p) for p in files], format="parquet", filesystem=store.filesystem).schema
    if column not in schema.names or column in ("month",):
        return None
    params = {f"m{i}": m for i, m in enumerate(months)}
    sql = USAGE_GROUPS_SQL.format(column=column, none=_lit(NONE), months=", ".join(f"${k}" for k in params))
    return _run(store, "utilization", files, sql, params)


def _run(store: Store, table: str, files: Sequence[Path], sql: str, params: Mapping[str, Any]) -> pd.DataFrame:
    """Run ``sql`` with ``table`` as a view over ``files`` (Hive partition columns as strings)."""
    import duckdb

    from finops_cli.errors import InputError
    from finops_cli.store.engine import connect, create_view

    with connect() as con:
        try:
            create_view(con, table, [store.locate(p) for p in files], store.filesystem)
            return con.execute(sql, dict(params)).df()
        except (duckdb.IOException, OSError) as exc:
            raise InputError(f"unreadable store file ({exc}); delete it and ingest its source again") from None
