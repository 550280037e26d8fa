"""Greedy merit-order dispatch: the reference plan when no bill is available (and always shown).

Definition (documented in ``docs/planner.md``): no commitments are bought; in every block, workloads
take turns in the order of ``workloads.yaml`` (non-deferrable first, then deferrable work spread evenly
over the horizon), and each fills its demand from its own cheapest compliant segment with capacity
left (price per unit incl. NETC and penalty), then the next one. That is what a team choosing "the
cheapest place that has room right now" does; the MILP can beat it by buying commitments, by moving
deferrable work into troughs and by leaving cheap capacity to the workloads that gain most from it.
Cost = usage at marginal price + prepaid (sunk) capacity, per substrate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from finops_cli.planner.frame import PlanFrame


@dataclass(frozen=True)
class DispatchResult:
    """Cost per substrate (usage + sunk) and units the greedy could not place."""

    cost_by_substrate: pd.Series
    unserved_units: float

    @property
    def cost(self) -> float:
        return float(self.cost_by_substrate.sum())


def sunk_by_substrate(frame: PlanFrame) -> pd.Series:
    """Prepaid capacity per substrate: ``committed_per_gpu_hour × gpus × horizon hours``."""
    return pd.Series(
        {
            s.id: s.committed_per_gpu_hour * (s.gpus or 0.0) * frame.horizon_hours
            for s in frame.substrates.values()
            if s.committed_per_gpu_hour and s.gpus
        },
        dtype=float,
    )


def merit_order_dispatch(frame: PlanFrame) -> DispatchResult:
    """Dispatch ``frame``'s demand greedily over its blocks (see the module docstring)."""
    rows = frame.rows
    first = rows[rows["block"] == 0]
    per_unit = (first["usd_per_gpu_hour"] + first["penalty_per_gpu_hour"]) / first["units_per_gpu_hour"]
    ordered = first.assign(per_unit=per_unit).sort_values(["group", "per_unit"], kind="stable")
    options = {
        g: list(
            zip(
                sub["substrate"],
                sub["segment"],
                sub["units_per_gpu_hour"],
                sub["usd_per_gpu_hour"],
                sub["wall_per_gpu_hour"],
                strict=True,
            )
        )
        for g, sub in ordered.groupby("group", sort=False)
    }
    order = list(dict.fromkeys(g for g, _share in frame.members.values()))
    fixed = frame.capacity["fixed_gpus"].to_dict()
    n, hours = frame.blocks.n, frame.blocks.hours
    cost: dict[str, float] = {}
    unserved = 0.0
    for b in range(n):
        left = {key: (np.inf if pd.isna(v) else float(v)) for key, v in fixed.items()}
        for g in sorted(order, key=lambda g: g in frame.deferrable_units):
            if g in frame.deferrable_units:
                need = frame.deferrable_units[g] / frame.horizon_hours
            else:
                need = float(frame.demand.get((g, b), 0.0))
            for sid, k, thr, usd, wall in options.get(g, []):
                if need <= 1e-12:
                    break
                take = min(need / thr, left[(sid, k)] / wall)  # useful GPUs; each holds ``wall`` pool GPUs
                if take <= 0:
                    continue
                left[(sid, k)] -= take * wall
                need -= take * thr
                cost[sid] = cost.get(sid, 0.0) + take * hours[b] * usd
            if need > 1e-9:
                unserved += need * hours[b]
    by_substrate = pd.Series(cost, dtype=float).add(sunk_by_substrate(frame), fill_value=0.0)
    return DispatchResult(by_substrate, unserved)
