"""Solve a :class:`~finops_cli.planner.matrix.PlanMatrix` with HiGHS, handed the CSC arrays directly (highspy).

No PuLP objects, no LP file: the arrays go to ``Highs.passModel`` as they are. With integers in the model
(commitment blocks, nodes) the duals come from the same ``Highs`` instance: the integer columns are fixed at
their values, made continuous, and the LP is re-solved warm, started by crossover from the MIP's solution
(a basis next to the optimum) rather than from scratch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from finops_cli.planner.matrix import PlanMatrix

_STATUS = {
    "kOptimal": "optimal",
    "kInfeasible": "infeasible",
    "kUnbounded": "unbounded",
    "kUnboundedOrInfeasible": "infeasible",
    "kTimeLimit": "not_solved",
    "kIterationLimit": "not_solved",
    "kSolutionLimit": "not_solved",
    "kInterrupt": "not_solved",
}


@dataclass
class HighsRun:
    """One HiGHS solve: status (optimal | feasible | infeasible | unbounded | not_solved), values, duals."""

    status: str
    objective: float | None
    best_bound: float | None
    seconds: float
    values: np.ndarray
    row_duals: np.ndarray | None


def _new_highs(time_limit: float | None, gap: float | None):
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if gap is not None:
        h.setOptionValue("mip_rel_gap", float(gap))
    return h


def pass_matrix(h, mx: PlanMatrix, *, integers: bool = True) -> None:
    """Hand ``mx`` to the ``Highs`` instance ``h`` as column-wise arrays."""
    import highspy

    lp = highspy.HighsLp()
    lp.num_col_ = mx.n_cols
    lp.num_row_ = mx.n_rows
    lp.col_cost_ = mx.cost
    lp.col_lower_ = mx.col_lower
    lp.col_upper_ = mx.col_upper
    lp.row_lower_ = mx.row_lower
    lp.row_upper_ = mx.row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = mx.start.astype(np.int32)
    lp.a_matrix_.index_ = mx.index.astype(np.int32)
    lp.a_matrix_.value_ = mx.value
    lp.a_matrix_.num_col_ = mx.n_cols
    lp.a_matrix_.num_row_ = mx.n_rows
    if integers and mx.has_integers:
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous for flag in mx.integer
        ]
    h.passModel(lp)


def _read(h, started: float, *, mip: bool) -> HighsRun:
    status = h.modelStatusToString(h.getModelStatus())
    info = h.getInfo()
    sol = h.getSolution()
    key = "k" + status.replace(" ", "")
    name = _STATUS.get(key)
    if name is None:
        name = {"Optimal": "optimal", "Infeasible": "infeasible", "Unbounded": "unbounded"}.get(status, "not_solved")
    has_value = bool(sol.value_valid)
    if name == "not_solved" and has_value:
        name = "feasible"
    values = np.asarray(sol.col_value, dtype=float) if has_value else np.zeros(h.getNumCol())
    objective = float(info.objective_function_value) if has_value else None
    best = float(info.mip_dual_bound) if mip else objective
    if best is not None and not np.isfinite(best):
        best = None
    duals = np.asarray(sol.row_dual, dtype=float) if (not mip and sol.dual_valid) else None
    return HighsRun(name, objective, best, time.perf_counter() - started, values, duals)


def solve_matrix(
    mx: PlanMatrix, *, time_limit: float | None = None, gap: float | None = None
) -> tuple[HighsRun, object]:
    """Solve ``mx`` (MILP if it has integers, else LP); returns the run and the ``Highs`` instance for re-use."""
    started = time.perf_counter()
    h = _new_highs(time_limit, gap)
    pass_matrix(h, mx)
    h.run()
    return _read(h, started, mip=mx.has_integers), h


def fixed_integer_duals(h, mx: PlanMatrix, values: np.ndarray) -> HighsRun:
    """Fix the integer columns of a solved MILP at ``values`` and re-solve the LP warm, for the row duals.

    The LP is started by crossover from the MIP's solution (``Highs.crossover``), which is already primal
    feasible and within the MIP gap of optimal, so simplex has only a few pivots left to do.
    """
    import highspy

    started = time.perf_counter()
    idx = np.flatnonzero(mx.integer).astype(np.int32)
    fixed = np.round(values[idx])
    h.changeColsBounds(len(idx), idx, fixed, fixed)
    h.changeColsIntegrality(len(idx), idx, np.array([highspy.HighsVarType.kContinuous] * len(idx)))
    h.setOptionValue("time_limit", float("inf"))
    start = values.copy()
    start[idx] = fixed
    solution = highspy.HighsSolution()
    solution.col_value = start
    solution.value_valid = True
    h.crossover(solution)
    h.run()
    return _read(h, started, mip=False)
