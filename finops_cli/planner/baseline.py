"""Greedy merit-order dispatch on the plan's blocks: the reference plan when no bill is available (and always shown).

No commitments bought; workloads take turns (non-deferrable first) filling demand from their cheapest compliant
segment with room, under every constraint the MILP has, so it is a feasible point of the MILP and the plan's
objective is never above :meth:`DispatchResult.objective`. Work it cannot place is reported, never dropped; with
``--integer-nodes`` it pays whole nodes as the MILP does (docs/planner.md, "Baselines and savings").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from finops_cli.planner.frame import PlanFrame

#: Units below this (per hour) are rounding noise, not unserved work.
_EPS = 1e-9


@dataclass(frozen=True)
class DispatchResult:
    """Cost per substrate (usage + sunk), steering penalty, and the work the greedy could not place (``unserved``:
    units per workload and block; block −1: deferrable work, over the horizon)."""

    cost_by_substrate: pd.Series
    unserved_units: float
    penalty: float = 0.0
    unserved: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["workload", "block", "units"]))
    # pool GPU-hours held per substrate (spot: wall hours, W per useful hour; API: units served)
    gpu_hours_by_substrate: pd.Series = field(default_factory=lambda: pd.Series(dtype=float))

    @property
    def cost(self) -> float:
        return float(self.cost_by_substrate.sum())

    @property
    def serves_all(self) -> bool:
        """True when the reference did all the work: only then is it a baseline savings can be claimed against."""
        return self.unserved_units <= 0.0

    def objective(self, unserved_price: float) -> float:
        """The MILP's objective evaluated at this dispatch: cost + penalty + ``unserved_price`` × unserved units."""
        return self.cost + self.penalty + unserved_price * self.unserved_units


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


_Option = tuple[str, int, float, float, float, float, bool]  # substrate, segment, θ, usd, penalty, W, is_api


def _options(frame: PlanFrame) -> dict[str, list[_Option]]:
    """Each group's segments, cheapest per unit (money + penalty) first; prices are the same in every block."""
    rows = frame.rows
    first = rows[rows["block"] == 0]
    per_unit = (first["usd_per_gpu_hour"] + first["penalty_per_gpu_hour"]) / first["units_per_gpu_hour"]
    ordered = first.assign(per_unit=per_unit).sort_values(["group", "per_unit"], kind="stable")
    cols = ["substrate", "segment", "units_per_gpu_hour", "usd_per_gpu_hour", "penalty_per_gpu_hour"]
    return {
        g: list(zip(*(sub[c] for c in cols), sub["wall_per_gpu_hour"], sub["is_api"], strict=True))
        for g, sub in ordered.groupby("group", sort=False)
    }


def merit_order_dispatch(frame: PlanFrame) -> DispatchResult:
    """Dispatch ``frame``'s demand greedily over its blocks (see the module docstring)."""
    options = _options(frame)
    order = list(dict.fromkeys(g for g, _share in frame.members.values()))
    n, hours = frame.blocks.n, frame.blocks.hours
    fixed = {key: (np.inf if pd.isna(v) else float(v)) for key, v in frame.capacity["fixed_gpus"].to_dict().items()}
    _whole_node_quota(frame, fixed)
    left = [dict(fixed) for _ in range(n)]  # pool GPUs left per (substrate, segment), per block
    parallel = [{g: frame.max_parallel_gpus.get(g, np.inf) for g in order} for _ in range(n)]
    cost: dict[str, float] = {}
    held: dict[tuple[str, int], float] = {}  # pool GPUs held per (substrate, block): whole nodes are paid on these
    penalty = [0.0]

    def take(g: str, b: int, option: _Option, need: float) -> float:
        """Serve up to ``need`` units/hour of ``g`` in block ``b`` on one segment; return the units/hour served."""
        sid, k, thr, usd, pen, wall, is_api = option
        room = left[b][(sid, k)] / wall
        gpus = min(need / thr, room if is_api else min(room, parallel[b][g]))  # useful GPUs (API: units/hour)
        if gpus <= 0:
            return 0.0
        left[b][(sid, k)] -= gpus * wall  # each useful GPU holds ``W`` pool GPUs
        held[(sid, b)] = held.get((sid, b), 0.0) + gpus * wall
        if not is_api:
            parallel[b][g] -= gpus
        cost[sid] = cost.get(sid, 0.0) + gpus * hours[b] * usd
        penalty[0] += gpus * hours[b] * pen
        return float(gpus * thr)

    def fill(g: str, b: int, need: float) -> float:
        """Serve ``need`` units/hour of ``g`` in block ``b`` cheapest first; return what is left."""
        for option in options.get(g, []):
            if need <= _EPS:
                break
            need -= take(g, b, option, need)
        return max(need, 0.0)

    short: dict[tuple[str, int], float] = {}  # (group, block) → units; block −1 = deferrable, whole horizon
    deferrable = [g for g in order if g in frame.deferrable_units]
    for b in range(n):
        for g in order:
            if g not in frame.deferrable_units:
                rest = fill(g, b, float(frame.demand.get((g, b), 0.0)))
                if rest > _EPS:
                    short[(g, b)] = rest * hours[b]
    behind = dict.fromkeys(deferrable, 0.0)  # deferrable units that did not fit their even share
    for b in range(n):
        for g in deferrable:
            behind[g] += fill(g, b, frame.deferrable_units[g] / frame.horizon_hours) * hours[b]
    for g in deferrable:  # second pass: anywhere in the horizon with room, cheapest segment first
        for option in options.get(g, []):
            for b in range(n):
                if behind[g] <= _EPS:
                    break
                behind[g] -= take(g, b, option, behind[g] / hours[b]) * hours[b]
        if behind[g] > _EPS * frame.horizon_hours:
            short[(g, -1)] = behind[g]
    _round_to_nodes(frame, held, cost)
    by_substrate = pd.Series(cost, dtype=float).add(sunk_by_substrate(frame), fill_value=0.0)
    unserved = _per_workload(frame, short)
    gpu_hours: dict[str, float] = {}
    for (sid, b), gpus in held.items():
        gpu_hours[sid] = gpu_hours.get(sid, 0.0) + gpus * float(hours[b])
    return DispatchResult(
        by_substrate, float(unserved["units"].sum()), penalty[0], unserved, pd.Series(gpu_hours, dtype=float)
    )


def _whole_node_quota(frame: PlanFrame, fixed: dict[tuple[str, int], float]) -> None:
    """``--integer-nodes``: a node substrate's segments hold at most ``max_nodes × gpus_per_node`` GPUs in all (the
    MILP cannot buy a partial node of quota either), taken from the last (dearest) segments."""
    for sid, row in frame.nodes.iterrows():
        if pd.isna(row["max_nodes"]):
            continue
        budget = float(row["max_nodes"]) * float(row["gpus_per_node"])
        for key in sorted(k for k in fixed if k[0] == sid):
            fixed[key] = min(fixed[key], max(budget, 0.0))
            budget -= fixed[key]


def _round_to_nodes(frame: PlanFrame, held: dict[tuple[str, int], float], cost: dict[str, float]) -> None:
    """``--integer-nodes``: the greedy pays whole nodes as the MILP does. The pool GPUs it holds on a node
    substrate in a block are rounded up to whole nodes; the idle remainder costs the idle price ``q_s``."""
    hours = frame.blocks.hours
    for (sid, b), gpus in held.items():
        if sid not in frame.nodes.index or gpus <= _EPS:
            continue
        per_node = float(frame.nodes.loc[sid, "gpus_per_node"])
        idle = math.ceil(gpus / per_node - 1e-9) * per_node - gpus
        cost[sid] = cost.get(sid, 0.0) + max(idle, 0.0) * hours[b] * float(frame.nodes.loc[sid, "usd_per_gpu_hour"])


def _per_workload(frame: PlanFrame, short: dict[tuple[str, int], float]) -> pd.DataFrame:
    """Split each group's unserved units back to its workloads (their share of the group's demand)."""
    out = []
    for w, (g, share) in frame.members.items():
        for (sg, b), units in short.items():
            if sg == g:
                part = units * float(share[max(b, 0)])
                if part > 0:
                    out.append((w, b, part))
    return pd.DataFrame(out, columns=["workload", "block", "units"])
