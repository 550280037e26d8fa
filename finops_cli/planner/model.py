"""The PuLP model of a plan and the handles the builder, solver and result reader share."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulp

from finops_cli.planner.frame import PlanFrame


@dataclass
class PlanModel:
    """A built plan: the PuLP problem plus each row family and variable set, by key.

    Row families (PuLP sanitises ``-`` in names to ``_``; code reads rows through these dicts):
    ``demand-{g}-{b}``, ``defer-{g}``, ``parallel-{g}-{b}``, ``cap-{s}-{k}-{b}``, ``nodes-{s}-{b}``.
    """

    frame: PlanFrame
    prob: pulp.LpProblem
    unserved_usd_per_unit: float
    integer_category: str = "Integer"
    x: list[pulp.LpVariable] = field(default_factory=list)
    commit: dict[str, pulp.LpVariable] = field(default_factory=dict)
    unserved: dict[tuple[str, int], pulp.LpVariable] = field(default_factory=dict)
    unserved_deferrable: dict[str, pulp.LpVariable] = field(default_factory=dict)
    demand_rows: dict[tuple[str, int], pulp.LpConstraint] = field(default_factory=dict)
    defer_rows: dict[str, pulp.LpConstraint] = field(default_factory=dict)
    parallel_rows: dict[tuple[str, int], pulp.LpConstraint] = field(default_factory=dict)
    cap_rows: dict[tuple[str, int, int], pulp.LpConstraint] = field(default_factory=dict)
    nodes: dict[tuple[str, int], pulp.LpVariable] = field(default_factory=dict)
    node_rows: dict[tuple[str, int], pulp.LpConstraint] = field(default_factory=dict)

    @property
    def has_integers(self) -> bool:
        return any(v.cat == pulp.LpInteger for v in [*self.commit.values(), *self.nodes.values()])
