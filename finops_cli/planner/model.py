"""A built plan: the matrix every solver reads and, for CBC, the PuLP problem made from it one row at a time
(one ``LpAffineExpression`` per row, never Python ``sum()``), so both solvers solve the same rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from finops_cli.planner.frame import PlanFrame
from finops_cli.planner.matrix import PlanMatrix, build_matrix

if TYPE_CHECKING:  # PuLP is imported only where the CBC model is built (~60 ms a HiGHS plan does not pay)
    import pulp


@dataclass
class PlanModel:
    """The plan's matrix and, when asked for, its PuLP problem with the variables and rows in matrix order.

    PuLP names them as :meth:`PlanMatrix.col_names`/:meth:`PlanMatrix.row_names` do, ``-`` spelled ``_``.
    """

    matrix: PlanMatrix
    prob: pulp.LpProblem | None = None
    columns: list[pulp.LpVariable] = field(default_factory=list)
    rows: list[pulp.LpConstraint] = field(default_factory=list)

    @property
    def frame(self) -> PlanFrame:
        return self.matrix.frame

    @property
    def has_integers(self) -> bool:
        return self.matrix.has_integers


def build_model(frame: PlanFrame, *, with_pulp: bool = True) -> PlanModel:
    """The model of ``frame`` (nothing solved yet); ``with_pulp=False`` builds the arrays only (HiGHS)."""
    m = PlanModel(build_matrix(frame))
    if with_pulp:
        _pulp_model(m)
    return m


def _pulp_model(m: PlanModel) -> None:
    import pulp  # only CBC needs the PuLP model (~60 ms to import)

    mx = m.matrix
    m.prob = prob = pulp.LpProblem("finops_plan", pulp.LpMinimize)
    for j, name in enumerate(mx.col_names()):
        upper = None if np.isinf(mx.col_upper[j]) else float(mx.col_upper[j])
        if mx.integer[j]:
            upper = None if upper is None else int(upper)
        cat = pulp.LpInteger if mx.integer[j] else pulp.LpContinuous
        m.columns.append(prob.add_variable(name, lowBound=float(mx.col_lower[j]), upBound=upper, cat=cat))
    cols = np.repeat(np.arange(mx.n_cols), np.diff(mx.start))  # the matrix row-wise: entries sorted by row
    order = np.argsort(mx.index, kind="stable")
    start = np.searchsorted(mx.index[order], np.arange(mx.n_rows + 1))
    index, value = cols[order], mx.value[order]
    for r, name in enumerate(mx.row_names()):
        sl = slice(start[r], start[r + 1])
        expr = pulp.LpAffineExpression([(m.columns[j], float(v)) for j, v in zip(index[sl], value[sl], strict=True)])
        lo, up = mx.row_lower[r], mx.row_upper[r]
        sense, rhs = (pulp.LpConstraintGE, float(lo)) if np.isfinite(lo) else (pulp.LpConstraintLE, float(up))
        m.rows.append(pulp.LpConstraint(expr, sense, name=name, rhs=rhs))
        prob.addConstraint(m.rows[-1])
    nz = np.flatnonzero(mx.cost)
    prob.setObjective(pulp.LpAffineExpression([(m.columns[j], float(mx.cost[j])) for j in nz]))
