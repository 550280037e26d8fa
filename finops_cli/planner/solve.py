"""Solve a plan model with HiGHS (handed the matrix, :mod:`.highs`; the default) or CBC (the PuLP model), with a
time limit and a relative MIP gap; docs/planner.md, "Solvers", says why HiGHS is the default."""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from finops_cli.planner.highs import HighsRun, fixed_integer_duals, solve_matrix
from finops_cli.planner.model import PlanModel

if TYPE_CHECKING:
    from highspy import Highs

SolverName = Literal["auto", "cbc", "highs"]

#: Default relative MIP gap (0.01 %): well inside the 0.1 % accuracy the block model is held to.
DEFAULT_GAP = 1e-4

#: Default gap with integer nodes (0.1 %): one integer per node substrate and block makes closing 0.01 % slow
#: (the sample estate: CBC > 10 min at 1e-4, 33 s at 1e-3 ending at 0.02 %). ``--gap`` overrides it.
NODES_GAP = 1e-3


@dataclass(frozen=True)
class SolveInfo:
    """What the solver said: ``status`` is optimal | feasible (stopped with a solution) | infeasible |
    unbounded | not_solved; ``best_bound`` is the proven lower bound on the objective."""

    name: str
    status: str
    objective: float | None
    best_bound: float | None
    mip_gap: float | None
    seconds: float


def _cbc_path() -> str | None:
    """PuLP's bundled CBC binary, else ``cbc`` on the PATH."""
    try:
        from pulp.apis import coin_api
    except ImportError:  # pragma: no cover - PuLP without COIN support
        return None
    for path in (getattr(coin_api, "pulp_cbc_path", None), getattr(coin_api, "cbc_path", None)):
        if path and (found := shutil.which(str(path))):
            return found
    return None


def _highs_available() -> bool:
    try:
        import highspy  # noqa: F401
    except ImportError:  # pragma: no cover - highspy is a dependency
        return False
    return True


def resolve_solver(name: SolverName) -> str:
    """``auto`` → HiGHS if available else CBC; an explicit choice that is missing falls back to the other (CBC is
    looked for only when asked for or HiGHS is missing: that imports PuLP, ~60 ms)."""
    found: dict[str, Callable[[], bool]] = {"highs": _highs_available, "cbc": lambda: _cbc_path() is not None}
    for solver in ("cbc", "highs") if name == "cbc" else ("highs", "cbc"):
        if found[solver]():
            return solver
    raise RuntimeError("no MILP solver available: install highspy (pip install highspy)")


_STATUS = {1: "optimal", 2: "feasible", 0: "not_solved", -1: "infeasible", -2: "unbounded", -3: "not_solved"}


@dataclass
class Solved:
    """A solved model as arrays: ``values`` per column and ``row_duals`` per row of the matrix (None when the
    duals were not asked for or the re-solve failed); ``dual`` describes the re-solve with integers fixed."""

    info: SolveInfo
    values: np.ndarray
    row_duals: np.ndarray | None = None
    dual: SolveInfo | None = None
    handle: tuple[Highs, HighsRun] | None = None  # (``Highs`` instance, its run): kept for the warm dual re-solve


def solve_model(
    m: PlanModel,
    solver: SolverName = "auto",
    *,
    time_limit: float | None = None,
    gap: float | None = DEFAULT_GAP,
    duals: bool = True,
) -> Solved:
    """Solve ``m`` and, with ``duals``, get the row duals from the LP with the integers fixed at their values."""
    name = resolve_solver(solver)
    if name == "highs":
        run, h = solve_matrix(m.matrix, time_limit=time_limit, gap=gap)
        info = _info("highs", run.status, run.objective, run.best_bound, run.seconds)
        # a relaxation that came out whole has the duals of the LP with the integers fixed already
        solved = Solved(info, run.values, run.row_duals, info if run.whole else None, (h, run))
    else:
        if m.prob is None:
            raise ValueError("CBC solves the PuLP model: build it with build_model(frame, with_pulp=True)")
        info = _solve_pulp(m, time_limit=time_limit, gap=gap)
        solved = Solved(info, _pulp_values(m), None if m.has_integers else _pulp_duals(m))
    return add_duals(m, solved) if duals else solved


def add_duals(m: PlanModel, solved: Solved) -> Solved:
    """Row duals of a solved model: with integers, from the LP re-solved with them fixed (HiGHS: warm)."""
    if solved.info.status not in ("optimal", "feasible") or not m.has_integers or solved.dual is not None:
        return solved
    if solved.info.name == "highs":
        assert solved.handle is not None  # every HiGHS solve keeps its instance and run
        h, run = solved.handle
        again = fixed_integer_duals(h, m.matrix, run)
        dual = _info("highs", again.status, again.objective, again.objective, again.seconds)
        values, row_duals = again.values, again.row_duals
    else:
        dual = fix_integers_and_resolve(m)
        values, row_duals = _pulp_values(m), _pulp_duals(m)
    if dual.status != "optimal":  # the plan keeps the MILP's values, without duals
        return replace(solved, row_duals=None, dual=dual)
    return replace(solved, values=values, row_duals=row_duals, dual=dual)


def _info(name: str, status: str, objective: float | None, best: float | None, seconds: float) -> SolveInfo:
    if best is None and status == "optimal":
        best = objective
    mip_gap = None
    if objective is not None and best is not None:
        mip_gap = max(0.0, (objective - best) / max(abs(objective), 1e-9))
    return SolveInfo(name, status, objective, best, mip_gap, seconds)


def _pulp_values(m: PlanModel) -> np.ndarray:
    return np.array([v.varValue or 0.0 for v in m.columns], dtype=float)


def _pulp_duals(m: PlanModel) -> np.ndarray:
    return np.array([np.nan if r.pi is None else float(r.pi) for r in m.rows], dtype=float)


def _solve_pulp(m: PlanModel, *, time_limit: float | None = None, gap: float | None = DEFAULT_GAP) -> SolveInfo:
    """Solve the PuLP model with CBC (variable values and row duals are set on the PuLP objects)."""
    import pulp

    prob = m.prob
    assert prob is not None
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="finops-cbc-") as tmp:
        log = Path(tmp) / "cbc.log"
        cmd = pulp.COIN_CMD(path=_cbc_path(), msg=False, timeLimit=time_limit, gapRel=gap, logPath=str(log), threads=1)
        prob.solve(cmd)
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    bound = re.search(r"Lower bound:\s*([-+0-9.eE]+)", text)  # CBC's closing summary
    seconds = time.perf_counter() - start
    status = _STATUS.get(prob.sol_status, _STATUS.get(prob.status, "not_solved"))
    objective = pulp.value(prob.objective) if status in ("optimal", "feasible") else None
    objective = float(objective) if objective is not None else None
    best_bound = float(bound.group(1)) if bound and m.has_integers else None
    return _info("cbc", status, objective, best_bound, seconds)


def fix_integers_and_resolve(m: PlanModel) -> SolveInfo:
    """Fix the PuLP model's commitment blocks and node counts at their values and re-solve the LP (CBC path)."""
    import pulp

    for j in np.flatnonzero(m.matrix.integer):
        var = m.columns[j]
        var.lowBound = var.upBound = round(var.value() or 0.0)
        var.cat = pulp.LpContinuous
    return _solve_pulp(m, gap=None)
