"""A built plan: the arrays every solver reads, plus (for CBC and tests) the PuLP model made from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from finops_cli.planner.frame import PlanFrame
from finops_cli.planner.matrix import PlanMatrix

if TYPE_CHECKING:  # PuLP is imported only where the CBC model is built (~60 ms a HiGHS plan does not pay)
    import pulp


@dataclass
class PlanModel:
    """The plan's matrix and, when built, the PuLP problem with each row family and variable set by key.

    Row families (PuLP sanitises ``-`` in names to ``_``; code reads rows through these dicts):
    ``demand-{g}-{b}``, ``defer-{g}``, ``parallel-{g}-{b}``, ``cap-{s}-{k}-{b}``, ``nodes-{s}-{b}``.
    HiGHS is handed :attr:`matrix` directly; ``prob`` is None unless the PuLP model was asked for.
    """

    frame: PlanFrame
    matrix: PlanMatrix
    prob: pulp.LpProblem | None = None
    columns: list[pulp.LpVariable] = field(default_factory=list)  # every PuLP variable, in matrix order
    x: list[pulp.LpVariable] = field(default_factory=list)
    commit: dict[str, pulp.LpVariable] = field(default_factory=dict)
    nodes: dict[tuple[str, int], pulp.LpVariable] = field(default_factory=dict)
    unserved: dict[tuple[str, int], pulp.LpVariable] = field(default_factory=dict)
    unserved_deferrable: dict[str, pulp.LpVariable] = field(default_factory=dict)
    demand_rows: dict[tuple[str, int], pulp.LpConstraint] = field(default_factory=dict)
    defer_rows: dict[str, pulp.LpConstraint] = field(default_factory=dict)
    parallel_rows: dict[tuple[str, int], pulp.LpConstraint] = field(default_factory=dict)
    cap_rows: dict[tuple[str, int, int], pulp.LpConstraint] = field(default_factory=dict)
    node_rows: dict[tuple[str, int], pulp.LpConstraint] = field(default_factory=dict)

    @property
    def unserved_usd_per_unit(self) -> float:
        return self.matrix.unserved_usd_per_unit

    @property
    def has_integers(self) -> bool:
        return self.matrix.has_integers
