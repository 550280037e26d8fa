"""Build the plan's MILP from a plan frame: reads like a table of contents.

``frame → variables (usage, commitments, nodes, unserved) → rows (demand, deferrable, parallel, capacity, nodes)
→ objective``. See ``docs/planner.md`` for the formulation.
"""

from __future__ import annotations

import pulp

from finops_cli.planner.constraints import (
    define_capacity,
    define_deferrable,
    define_demand,
    define_nodes,
    define_parallel,
)
from finops_cli.planner.frame import PlanFrame
from finops_cli.planner.model import PlanModel
from finops_cli.planner.objective import define_objective
from finops_cli.planner.variables import define_commitments, define_unserved, define_usage
from finops_cli.planner.variables import define_nodes as define_node_counts

#: Unserved work costs this many times the dearest real price per unit in the model (and at least 1000).
UNSERVED_PRICE_FACTOR = 100.0


def unserved_price(frame: PlanFrame) -> float:
    """Price per unit of unserved work: far above any real way of serving it."""
    rows = frame.rows
    if rows.empty:
        return 1000.0
    per_unit = (rows["usd_per_gpu_hour"] + rows["penalty_per_gpu_hour"]) / rows["units_per_gpu_hour"]
    return max(1000.0, UNSERVED_PRICE_FACTOR * float(per_unit.max()))


def build_model(frame: PlanFrame, name: str = "finops_plan") -> PlanModel:
    """The PuLP model of ``frame`` (nothing solved yet)."""
    m = PlanModel(frame, pulp.LpProblem(name, pulp.LpMinimize), unserved_price(frame))
    define_usage(m)
    define_commitments(m)
    define_node_counts(m)
    define_unserved(m)
    define_demand(m)
    define_deferrable(m)
    define_parallel(m)
    define_capacity(m)
    define_nodes(m)
    define_objective(m)
    return m
