"""Build the plan's model from a plan frame: the arrays first, then (for CBC) the PuLP model made from them.

``frame → matrix (variables, rows, objective as arrays; docs/planner.md has the formulation) → PuLP``. The
PuLP model is made from the matrix one row at a time (one ``LpAffineExpression`` per row, never Python
``sum()``), so CBC and HiGHS solve the same rows, and the per-term objects are paid only when CBC is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from finops_cli.planner.frame import PlanFrame
from finops_cli.planner.matrix import PlanMatrix, build_matrix, unserved_price
from finops_cli.planner.model import PlanModel

__all__ = ["build_model", "unserved_price"]


def build_model(frame: PlanFrame, name: str = "finops_plan", *, with_pulp: bool = True) -> PlanModel:
    """The model of ``frame`` (nothing solved yet); ``with_pulp=False`` builds the arrays only (HiGHS)."""
    m = PlanModel(frame, build_matrix(frame))
    if with_pulp:
        _pulp_model(m, name)
    return m


def _pulp_model(m: PlanModel, name: str) -> None:
    import pulp  # only CBC needs the PuLP model (~60 ms to import)

    mx: PlanMatrix = m.matrix
    prob = pulp.LpProblem(name, pulp.LpMinimize)
    add = prob.add_variable
    names = mx.col_names()
    cols: list[pulp.LpVariable] = []
    for j, col in enumerate(names):
        upper = None if np.isinf(mx.col_upper[j]) else float(mx.col_upper[j])
        cat = pulp.LpInteger if mx.integer[j] else pulp.LpContinuous
        if mx.integer[j] and upper is not None:
            upper = int(upper)
        cols.append(add(col, lowBound=float(mx.col_lower[j]), upBound=upper, cat=cat))
    m.columns = cols
    m.x = cols[: mx.n_x]
    m.commit = dict(zip(mx.commit_keys, cols[mx.commit_col0 : mx.node_col0], strict=True))
    m.nodes = dict(zip(mx.node_keys, cols[mx.node_col0 : mx.unserved_col0], strict=True))
    m.unserved = dict(zip(mx.demand_keys, cols[mx.unserved_col0 : mx.defer_unserved_col0], strict=True))
    m.unserved_deferrable = dict(zip(mx.defer_keys, cols[mx.defer_unserved_col0 :], strict=True))

    start, index, value = mx.csr()
    row_names = mx.row_names()
    families: list[tuple[dict[Any, Any], Sequence[Any]]] = [
        (m.demand_rows, mx.demand_keys),
        (m.defer_rows, mx.defer_keys),
        (m.parallel_rows, mx.parallel_keys),
        (m.cap_rows, mx.cap_keys),
        (m.node_rows, mx.node_keys),
    ]
    r = 0
    for store, keys in families:
        for key in keys:
            lo, up = mx.row_lower[r], mx.row_upper[r]
            sl = slice(start[r], start[r + 1])
            expr = pulp.LpAffineExpression([(cols[j], float(v)) for j, v in zip(index[sl], value[sl], strict=True)])
            sense, rhs = (pulp.LpConstraintGE, float(lo)) if np.isfinite(lo) else (pulp.LpConstraintLE, float(up))
            row = pulp.LpConstraint(expr, sense, name=row_names[r], rhs=rhs)
            prob.addConstraint(row)
            store[key] = row
            r += 1
    nz = np.flatnonzero(mx.cost)
    prob.setObjective(pulp.LpAffineExpression([(cols[j], float(mx.cost[j])) for j in nz]))
    m.prob = prob
