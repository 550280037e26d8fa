"""Read a solved plan back: allocations per workload and substrate, commitments, shortages, nodes and clearing
prices (each demand row's dual over its block hours). Group rows are split back to their members pro rata to
demand (exact for identical members); the money is that of docs/planner.md, "What the plan reports".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from finops_cli.core.pricing import base_price_per_gpu_hour, useful_gpu_hour_price
from finops_cli.planner.frame import NODE_KINDS, PlanFrame
from finops_cli.planner.model import PlanModel
from finops_cli.planner.solve import Solved, SolveInfo

#: Columns of :attr:`PlanSolution.nodes` (one row per node substrate and block).
NODE_RESULT_COLUMNS = ["substrate", "block", "nodes", "node_hours", "wall_gpu_hours", "rounding_cost"]

#: Columns of :attr:`PlanSolution.fractional_nodes` (without ``--integer-nodes``: the nodes the plan assumed).
FRACTIONAL_NODE_COLUMNS = ["substrate", "block", "hours", "nodes", "rounding_cost"]

#: Values below this (GPUs, units/hour) are solver noise.
TOL = 1e-7


@dataclass
class PlanSolution:
    """A solved plan in frames (money in the fleet's currency, quantities over the horizon)."""

    solve: SolveInfo
    usage: pd.DataFrame  # workload, substrate, kind, block, gpu_hours, units, cost, penalty
    allocations: pd.DataFrame  # workload, substrate, kind, gpu_hours, units, cost, penalty, netc_overhead
    commitments: pd.DataFrame  # substrate, blocks, gpus, cost
    unserved: pd.DataFrame  # workload, block, hours, units, units_per_hour
    clearing_prices: pd.DataFrame  # workload, block, hours, usd_per_unit
    usage_cost: float
    commitment_cost: float
    penalty: float
    sunk_cost: float
    dual_solve: SolveInfo | None = None
    nodes: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=NODE_RESULT_COLUMNS))
    node_rounding_cost: float = 0.0
    fractional_nodes: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FRACTIONAL_NODE_COLUMNS))

    @property
    def planned_cost(self) -> float:
        """Full cost of the plan over the horizon: usage + new commitments + node rounding + prepaid (sunk)."""
        return self.usage_cost + self.commitment_cost + self.node_rounding_cost + self.sunk_cost

    def cost_by_substrate(self) -> pd.Series:
        """Usage + new commitments + node rounding, per substrate id (sunk cost is added by the document)."""
        cost = self.allocations.groupby("substrate")["cost"].sum()
        if not self.commitments.empty:
            cost = cost.add(self.commitments.set_index("substrate")["cost"], fill_value=0.0)
        if not self.nodes.empty:
            cost = cost.add(self.nodes.groupby("substrate")["rounding_cost"].sum(), fill_value=0.0)
        return cost


def _members_frame(m: PlanModel) -> pd.DataFrame:
    n = m.frame.blocks.n
    parts = [
        pd.DataFrame({"workload": w, "group": g, "block": np.arange(n), "share": share})
        for w, (g, share) in m.frame.members.items()
    ]
    return pd.concat(parts, ignore_index=True)


def read_solution(m: PlanModel, solved: Solved) -> PlanSolution:
    """Turn the solved column values (and row duals, when asked for) into a :class:`PlanSolution`."""
    frame = m.frame
    mx = m.matrix
    rows = frame.rows
    all_values = solved.values
    values = all_values[: mx.n_x].copy()
    values[values < TOL] = 0.0
    used = rows[values > 0].copy()
    x = values[values > 0]
    used["gpu_hours"] = x * used["hours"].to_numpy()
    used["units"] = used["gpu_hours"] * used["units_per_gpu_hour"]
    used["cost"] = used["gpu_hours"] * used["usd_per_gpu_hour"]
    used["penalty"] = used["gpu_hours"] * used["penalty_per_gpu_hour"]
    members = _members_frame(m)
    per_w = used.merge(members, on=["group", "block"], how="inner")
    for col in ("gpu_hours", "units", "cost", "penalty"):
        per_w[col] = per_w[col] * per_w["share"]
    kinds = {sid: s.kind for sid, s in frame.substrates.items()}
    per_w["kind"] = per_w["substrate"].map(kinds)
    usage = (
        per_w.groupby(["workload", "substrate", "kind", "block"], as_index=False)[
            ["gpu_hours", "units", "cost", "penalty"]
        ]
        .sum()
        .sort_values(["workload", "substrate", "block"], ignore_index=True)
    )
    allocations = usage.groupby(["workload", "substrate", "kind"], as_index=False)[
        ["gpu_hours", "units", "cost", "penalty"]
    ].sum()

    def _netc(row: pd.Series) -> float:
        if row["kind"] != "spot":
            return 0.0
        price = useful_gpu_hour_price(frame.substrates[row["substrate"]], frame.workloads[row["workload"]])
        return float(row["cost"]) * price.overhead_share

    allocations["netc_overhead"] = allocations.apply(_netc, axis=1) if len(allocations) else 0.0

    blocks = np.round(all_values[mx.commit_col0 : mx.node_col0]).astype(int)
    bought = frame.commitments
    commitments = pd.DataFrame(
        {
            "substrate": mx.commit_keys,
            "blocks": blocks,
            "gpus": blocks * bought["block_gpus"].to_numpy(dtype=float),
            "cost": blocks * bought["usd_per_block"].to_numpy(dtype=float),
        }
    )

    hours = frame.blocks.hours
    nodes = _nodes_frame(m, all_values)
    unserved = unserved_frame(m, all_values)

    prices = []
    duals = solved.row_duals
    if duals is not None:
        group_members: dict[str, list[str]] = {}
        for w, (g, _share) in frame.members.items():
            group_members.setdefault(g, []).append(w)
        for r, (g, b) in enumerate(mx.demand_keys):
            pi = duals[r]
            if np.isfinite(pi):
                prices += [(w, int(b), float(hours[b]), float(pi) / float(hours[b])) for w in group_members.get(g, [])]
        for r, g in enumerate(mx.defer_keys, start=mx.defer_row0):
            pi = duals[r]
            if np.isfinite(pi):
                prices += [(w, -1, float(frame.horizon_hours), float(pi)) for w in group_members.get(g, [])]
    clearing = pd.DataFrame(prices, columns=["workload", "block", "hours", "usd_per_unit"])

    return PlanSolution(
        solve=solved.info,
        usage=usage,
        allocations=allocations,
        commitments=commitments,
        unserved=unserved,
        clearing_prices=clearing,
        usage_cost=float(allocations["cost"].sum()) if len(allocations) else 0.0,
        commitment_cost=float(commitments["cost"].sum()) if len(commitments) else 0.0,
        penalty=float(allocations["penalty"].sum()) if len(allocations) else 0.0,
        sunk_cost=frame.sunk_cost,
        dual_solve=solved.dual,
        nodes=nodes,
        node_rounding_cost=float(nodes["rounding_cost"].sum()) if len(nodes) else 0.0,
        fractional_nodes=_fractional_nodes(frame, used),
    )


def _fractional_nodes(frame: PlanFrame, used: pd.DataFrame) -> pd.DataFrame:
    """Without ``--integer-nodes``: per node-billed substrate and block, the nodes the plan assumed where that is
    not whole, and what rounding them up to whole nodes would cost at the idle price ``price × preference``."""
    if not frame.nodes.empty or used.empty:
        return pd.DataFrame(columns=FRACTIONAL_NODE_COLUMNS)
    per_node = {
        sid: float(s.gpus_per_node)
        for sid, s in frame.substrates.items()
        if s.kind in NODE_KINDS and s.gpus_per_node is not None
    }
    sub = used[used["substrate"].isin(list(per_node))]
    if sub.empty:
        return pd.DataFrame(columns=FRACTIONAL_NODE_COLUMNS)
    wall = (sub["gpu_hours"] * sub["wall_per_gpu_hour"]).groupby([sub["substrate"], sub["block"]]).sum()
    out = wall.rename("wall_gpu_hours").reset_index()
    out["hours"] = frame.blocks.hours[out["block"].to_numpy()]
    gpus = np.array([per_node[s] for s in out["substrate"]], dtype=float)
    price = np.array(
        [base_price_per_gpu_hour(frame.substrates[s]) * frame.substrates[s].preference for s in out["substrate"]],
        dtype=float,
    )
    nodes = out["wall_gpu_hours"].to_numpy(dtype=float) / out["hours"].to_numpy(dtype=float) / gpus
    out["nodes"] = nodes
    out["rounding_cost"] = (np.ceil(nodes - 1e-9) - nodes) * gpus * out["hours"].to_numpy(dtype=float) * price
    out = out[np.abs(nodes - np.round(nodes)) > 1e-6]
    return out[FRACTIONAL_NODE_COLUMNS].reset_index(drop=True)


def unserved_frame(m: PlanModel, values: np.ndarray) -> pd.DataFrame:
    """Shortages per workload and block (block −1: a deferrable total over the horizon)."""
    frame, mx = m.frame, m.matrix
    hours = frame.blocks.hours
    short = []
    u = values[mx.unserved_col0 : mx.defer_unserved_col0]
    for (g, b), ub in zip(mx.demand_keys, u, strict=True):
        if ub > TOL * max(1.0, float(frame.demand[(g, b)])):
            for w, (wg, share) in frame.members.items():
                if wg == g and share[b] > 0:
                    short.append((w, int(b), float(hours[b]), ub * share[b] * hours[b], ub * share[b]))
    ud = values[mx.defer_unserved_col0 :]
    for g, ug in zip(mx.defer_keys, ud, strict=True):
        if ug > TOL * max(1.0, frame.deferrable_units[g]):
            for w, (wg, share) in frame.members.items():
                if wg == g and share[0] > 0:
                    short.append(
                        (w, -1, float(frame.horizon_hours), ug * share[0], ug * share[0] / frame.horizon_hours)
                    )
    return pd.DataFrame(short, columns=["workload", "block", "hours", "units", "units_per_hour"])


def _nodes_frame(m: PlanModel, values: np.ndarray) -> pd.DataFrame:
    """Nodes, node-hours, wall GPU-hours used and node rounding cost per node substrate and block."""
    if not m.matrix.node_keys:
        return pd.DataFrame(columns=NODE_RESULT_COLUMNS)
    frame = m.frame
    rows = frame.rows
    sub = rows[rows["substrate"].isin(list(frame.nodes.index))]
    wall = pd.Series(
        values[sub.index.to_numpy()] * sub["hours"].to_numpy() * sub["wall_per_gpu_hour"].to_numpy(), index=sub.index
    )
    used = wall.groupby([sub["substrate"], sub["block"]]).sum().to_dict()
    out = []
    mx = m.matrix
    node_values = values[mx.node_col0 : mx.unserved_col0]
    for (s, b), value in zip(mx.node_keys, node_values, strict=True):
        n = round(float(value))
        h = float(frame.blocks.hours[b])
        gpu_hours = float(used.get((s, b), 0.0))
        per_node = float(frame.nodes.loc[s, "gpus_per_node"])
        idle = max(0.0, per_node * n * h - gpu_hours)
        out.append((s, b, n, n * h, gpu_hours, idle * float(frame.nodes.loc[s, "usd_per_gpu_hour"])))
    return pd.DataFrame(out, columns=NODE_RESULT_COLUMNS)
