"""Over seeds: each experiment's table cells as a mean and a 95 % t-interval (see :mod:`.experiments`)."""

from __future__ import annotations

import math
import statistics
from typing import Any

from finops_cli.sim.market.results import ExperimentResult

#: The columns that name a table cell (everything else is a metric averaged over seeds).
KEYS = {
    "contention": ("composition", "contention", "policy"),
    "overhead": ("multiplier",),
    "misestimate": ("estimate",),
    "volatility": ("level", "bid_clip", "floor_fall_per_hour"),
    "frontier": ("policy", "budget_multiple"),
    "operator": ("contention", "policy"),
    "urgency": ("urgency", "policy"),
}
#: Metrics shown with their 95 % interval (``<metric>_ci``: the half-width) in every table.
CI_METRICS = (
    "retained",
    "retained_services",
    "retained_change",
    "cost",
    "churn_per_tenant_hour",
    "migrations_per_tenant",
    "capped_mean_load",
    "hours_over_cap",
    "points",
)

#: Two-sided 95 % Student-t quantiles by degrees of freedom (1–9; beyond, 1.96 is close enough for a table).
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def mean_ci(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and the half-width of its 95 % t-interval over seeds (None with fewer than 2 values)."""
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return None, None
    m = statistics.fmean(vals)
    if len(vals) < 2:
        return m, None
    return m, _T95.get(len(vals) - 1, 1.96) * statistics.stdev(vals) / math.sqrt(len(vals))


def aggregate(keys: tuple[str, ...], per_seed: list[ExperimentResult]) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per cell: the mean of every numeric metric over seeds, ``<metric>_ci`` for :data:`CI_METRICS`."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for res in per_seed:
        for row in res.rows:
            groups.setdefault(tuple(row.get(k) for k in keys), []).append(row)
    rows = []
    for key, members in groups.items():
        out: dict[str, Any] = dict(zip(keys, key, strict=True))
        out["seeds"] = len(members)
        for col in members[0]:
            if col in keys:
                continue
            vals = [m.get(col) for m in members]
            if all(isinstance(v, bool) for v in vals if v is not None):
                nums = [float(v) for v in vals if v is not None]
                out[col] = statistics.fmean(nums) if nums else None  # a share of seeds
                continue
            if not all(isinstance(v, int | float) for v in vals if v is not None):
                out[col] = vals[0]
                continue
            m, ci = mean_ci([float(v) for v in vals if v is not None])
            out[col] = m
            if col in CI_METRICS:
                out[f"{col}_ci"] = ci
        rows.append(out)
    cols: list[str] = []
    for c in per_seed[0].columns:
        cols.append(c)
        if c in CI_METRICS:
            cols.append(f"{c}_ci")
    return rows, [*cols, "seeds"]


def contention_summary(per_seed: list[ExperimentResult], spot: str) -> dict[str, Any]:
    """Per cell and baseline: the reduction of degradation by renegotiation, mean and 95 % interval over seeds."""
    out: dict[str, Any] = {"reduction_vs": {}}
    for b in ("fcfs", spot):
        cells: dict[tuple[str, float], list[dict[str, Any]]] = {}
        for res in per_seed:
            for r in res.summary["reduction_vs"][b]:
                cells.setdefault((r["composition"], r["contention"]), []).append(r)
        agg = []
        for (comp, rho), rs in cells.items():
            red, red_ci = mean_ci([r["reduction"] for r in rs if r["reduction"] is not None])
            pts, pts_ci = mean_ci([r["points"] for r in rs])
            agg.append(
                {
                    "composition": comp,
                    "contention": rho,
                    "reduction": red,
                    "reduction_ci": red_ci,
                    "points": pts,
                    "points_ci": pts_ci,
                }
            )
        out["reduction_vs"][b] = agg
        vals = [float(x) for a in agg if isinstance(x := a["reduction"], float)]
        out[f"reduction_vs_{b}_range"] = [min(vals), max(vals)] if vals else None
    return out
