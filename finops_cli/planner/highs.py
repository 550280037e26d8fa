"""Solve a :class:`~finops_cli.planner.matrix.PlanMatrix` with HiGHS, handed its CSC arrays (no PuLP, no LP file).

The LP relaxation first: if its integer columns come out whole it is the optimum, duals included. Otherwise the
MILP, then the duals from the same ``Highs`` instance with the integers fixed, re-solved warm.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from finops_cli.planner.matrix import PlanMatrix

if TYPE_CHECKING:
    from highspy import Highs, HighsBasis

#: HiGHS's model status (by enum name) → ours; any other status is ``not_solved`` (``feasible`` with a solution).
_STATUS = {
    "kOptimal": "optimal",
    "kInfeasible": "infeasible",
    "kUnbounded": "unbounded",
    "kUnboundedOrInfeasible": "infeasible",
}

#: LPs with this many columns or more are solved by interior point (with crossover): 21.5 s against 34 s for dual
#: simplex on 134 k columns (200 distinct workloads × 40 substrates × 168 h).
IPM_MIN_COLUMNS = 100_000


@dataclass
class HighsRun:
    """One HiGHS solve: status (optimal | feasible | infeasible | unbounded | not_solved), values, duals."""

    status: str
    objective: float | None
    best_bound: float | None
    seconds: float
    values: np.ndarray
    row_duals: np.ndarray | None
    whole: bool = False  # an LP relaxation whose integer columns came out whole: the MILP optimum, with duals
    basis: HighsBasis | None = None  # the LP relaxation's basis, to start the dual re-solve from


@contextmanager
def _quiet_stdout() -> Iterator[None]:
    """The C-level stdout to the null device while a ``Highs`` is created: it prints its banner there before
    ``output_flag`` can be set, and stdout carries data (``--format json``)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(null)


def new_highs(time_limit: float | None, gap: float | None) -> Highs:
    """A silent single-thread ``Highs`` (no banner, no log) with the plan's time limit and MIP gap."""
    import highspy

    with _quiet_stdout():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("log_to_console", False)
    h.setOptionValue("threads", 1)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if gap is not None:
        h.setOptionValue("mip_rel_gap", float(gap))
    return h


def pass_matrix(h: Highs, mx: PlanMatrix, *, integers: bool = True, columns: np.ndarray | None = None) -> None:
    """Hand ``mx`` to ``h`` column-wise (only ``columns``, in that order, if given: a working set whose other
    columns the caller prices out)."""
    import highspy

    cost, col_lower, col_upper, start, index, value = mx.cost, mx.col_lower, mx.col_upper, mx.start, mx.index, mx.value
    integer = mx.integer
    if columns is not None:
        cost, col_lower, col_upper, integer = cost[columns], col_lower[columns], col_upper[columns], integer[columns]
        start, index, value = column_slices(mx, columns)
    lp = highspy.HighsLp()
    lp.num_col_ = lp.a_matrix_.num_col_ = len(cost)
    lp.num_row_ = lp.a_matrix_.num_row_ = mx.n_rows
    lp.col_cost_ = cost
    lp.col_lower_ = col_lower
    lp.col_upper_ = col_upper
    lp.row_lower_ = mx.row_lower
    lp.row_upper_ = mx.row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start.astype(np.int32)
    lp.a_matrix_.index_ = index.astype(np.int32)
    lp.a_matrix_.value_ = value
    if integers and integer.any():
        kinds = highspy.HighsVarType
        lp.integrality_ = [kinds.kInteger if flag else kinds.kContinuous for flag in integer]
    h.passModel(lp)


def column_slices(mx: PlanMatrix, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSC ``start``, ``index``, ``value`` of ``columns`` of ``mx`` (in that order)."""
    counts = mx.start[columns + 1] - mx.start[columns]
    start = np.concatenate([[0], np.cumsum(counts)])
    pos = np.repeat(mx.start[columns] - start[:-1], counts) + np.arange(int(start[-1]))
    return start, mx.index[pos], mx.value[pos]


def _read(h: Highs, started: float, *, mip: bool) -> HighsRun:
    sol = h.getSolution()
    has_value = bool(sol.value_valid)
    name = _STATUS.get(h.getModelStatus().name, "feasible" if has_value else "not_solved")
    values = np.asarray(sol.col_value, dtype=float) if has_value else np.zeros(h.getNumCol())
    info = h.getInfo()
    objective = float(info.objective_function_value) if has_value else None
    best = float(info.mip_dual_bound) if mip else objective
    if best is not None and not np.isfinite(best):
        best = None
    duals = np.asarray(sol.row_dual, dtype=float) if (not mip and sol.dual_valid) else None
    return HighsRun(name, objective, best, time.perf_counter() - started, values, duals)


def solve_matrix(
    mx: PlanMatrix, *, time_limit: float | None = None, gap: float | None = None
) -> tuple[HighsRun, Highs]:
    """Solve ``mx``: the run and the ``Highs`` instance (kept for the warm dual re-solve)."""
    started = time.perf_counter()
    h = new_highs(time_limit, gap)
    pass_matrix(h, mx, integers=False)
    if mx.n_cols >= IPM_MIN_COLUMNS:
        h.setOptionValue("solver", "ipm")  # crossover (on by default) still gives a basis and vertex duals
    h.run()
    h.setOptionValue("solver", "choose")
    relaxed = _read(h, started, mip=False)
    if not mx.has_integers or relaxed.status != "optimal":
        return relaxed, h
    ints = np.flatnonzero(mx.integer)
    if np.abs(relaxed.values[ints] - np.round(relaxed.values[ints])).max() <= 1e-6:
        relaxed.values[ints] = np.round(relaxed.values[ints])
        relaxed.whole = True
        return relaxed, h
    if len(ints) == 1:
        rounded = _round_one_integer(h, mx, relaxed, started, time_limit)
        if rounded is not None:
            return rounded, h
    import highspy

    h.setOptionValue("time_limit", float("inf") if time_limit is None else max(1.0, time_limit - relaxed.seconds))
    basis = h.getBasis()
    # measured on the sample estate: HiGHS's MIP presolve took 6.6 s of a 6.6 s solve (0.9 s without it)
    h.setOptionValue("presolve", "off")
    # left in the instance, the fractional relaxation is a "user MIP start" HiGHS first completes by a sub-MIP
    # (0.23 of 0.59 s on the sample estate) before reaching the same optimum: cleared (the basis is saved above)
    h.clearSolver()
    idx = ints.astype(np.int32)
    h.changeColsIntegrality(len(idx), idx, np.array([highspy.HighsVarType.kInteger] * len(idx)))
    h.run()
    run = _read(h, started, mip=True)
    run.basis = basis
    return run, h


def _round_one_integer(
    h: Highs, mx: PlanMatrix, relaxed: HighsRun, started: float, time_limit: float | None
) -> HighsRun | None:
    """The MILP optimum of a model with one integer column: the cheaper of two warm LPs with it fixed at
    ``floor(x*)`` and ``ceil(x*)`` (exact: docs/planner.md, "One integer column"; ties to the smaller).
    None when neither LP solves (the caller runs the MILP)."""
    j = int(np.flatnonzero(mx.integer)[0])
    x = float(relaxed.values[j])
    low, high = float(mx.col_lower[j]), float(mx.col_upper[j])
    candidates = sorted({min(max(np.floor(x), low), high), min(max(np.ceil(x), low), high)})
    basis = h.getBasis()
    idx = np.array([j], dtype=np.int32)
    best: HighsRun | None = None
    best_value, best_cost = 0.0, float("inf")
    for value in candidates:
        if time_limit is not None:
            h.setOptionValue("time_limit", max(1.0, time_limit - (time.perf_counter() - started)))
        h.changeColsBounds(1, idx, np.array([value]), np.array([value]))
        h.setBasis(basis)
        h.run()
        run = _read(h, started, mip=False)
        cost = run.objective if run.status == "optimal" and run.objective is not None else float("inf")
        if cost < best_cost - 1e-9 * max(1.0, abs(cost)):
            best, best_value, best_cost = run, value, cost
    if best is None:
        h.changeColsBounds(1, idx, np.array([low]), np.array([high]))
        h.setBasis(basis)
        return None
    best.values[j] = best_value
    best.whole = True  # its duals are the plan's: the instance is not solved again
    return best


def fixed_integer_duals(h: Highs, mx: PlanMatrix, run: HighsRun) -> HighsRun:
    """Fix the integer columns of a solved MILP at their values and re-solve the LP for the row duals, warm from
    the relaxation's basis (only bounds changed: a few pivots)."""
    import highspy

    started = time.perf_counter()
    idx = np.flatnonzero(mx.integer).astype(np.int32)
    fixed = np.round(run.values[idx])
    h.changeColsIntegrality(len(idx), idx, np.array([highspy.HighsVarType.kContinuous] * len(idx)))
    h.changeColsBounds(len(idx), idx, fixed, fixed)
    h.setOptionValue("time_limit", float("inf"))
    if run.basis is not None:
        h.setBasis(run.basis)
    h.run()
    return _read(h, started, mip=False)
