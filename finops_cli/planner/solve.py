"""Solve a plan model with CBC (through PuLP) or HiGHS (highspy through PuLP's HiGHS interface).

CBC is the default where its binary is available (PuLP ≤ 3 bundles it); HiGHS is selectable and the
automatic fallback (PuLP 4 ships without CBC). A time limit and a relative MIP gap are honoured; the
report carries status, objective, best bound, gap and wall seconds.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pulp

from finops_cli.planner.model import PlanModel

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
    try:
        from pulp.apis import coin_api
    except ImportError:  # pragma: no cover - PuLP without COIN support
        return None
    for path in (getattr(coin_api, "pulp_cbc_path", None), getattr(coin_api, "cbc_path", None)):
        if path and (os.path.isfile(path) or _which(path)):
            return path if os.path.isfile(path) else _which(path)
    return None


def _which(name: str) -> str | None:
    from shutil import which

    return which(name)


def available_solvers() -> list[str]:
    """Solvers usable here, preferred first."""
    out = []
    if _cbc_path():
        out.append("cbc")
    if pulp.HiGHS().available():
        out.append("highs")
    return out


def resolve_solver(name: SolverName) -> str:
    """``auto`` → CBC if available else HiGHS; an explicit choice that is missing falls back with the other."""
    avail = available_solvers()
    if not avail:
        raise RuntimeError("no MILP solver available: install highspy (pip install highspy)")
    if name == "auto" or name not in avail:
        return avail[0]
    return name


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Solver banners go to stderr: stdout carries only data (``--format json``)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    try:
        os.dup2(sys.stderr.fileno(), fd)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, fd)
        os.close(saved)


_STATUS = {1: "optimal", 2: "feasible", 0: "not_solved", -1: "infeasible", -2: "unbounded", -3: "not_solved"}


def _parse_cbc_log(text: str) -> tuple[float | None, float | None]:
    """(objective, best bound) from CBC's closing summary."""
    obj = re.search(r"Objective value:\s*([-+0-9.eE]+)", text)
    bound = re.search(r"Lower bound:\s*([-+0-9.eE]+)", text)
    return (float(obj.group(1)) if obj else None, float(bound.group(1)) if bound else None)


def solve_model(
    m: PlanModel,
    solver: SolverName = "auto",
    *,
    time_limit: float | None = None,
    gap: float | None = DEFAULT_GAP,
) -> SolveInfo:
    """Solve ``m`` in place (variable values and row duals are set) and report how it went."""
    name = resolve_solver(solver)
    start = time.perf_counter()
    best_bound: float | None = None
    if name == "cbc":
        with tempfile.TemporaryDirectory(prefix="finops-cbc-") as tmp:
            log = Path(tmp) / "cbc.log"
            cmd = pulp.COIN_CMD(
                path=_cbc_path(), msg=False, timeLimit=time_limit, gapRel=gap, logPath=str(log), threads=1
            )
            m.prob.solve(cmd)
            text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        _obj, best_bound = _parse_cbc_log(text)
    else:
        highs = pulp.HiGHS(msg=False, timeLimit=time_limit, gapRel=gap)
        with _stdout_to_stderr():
            m.prob.solve(highs)
        model = getattr(m.prob, "solverModel", None)
        if model is not None and m.has_integers:
            info = model.getInfo()
            best_bound = float(info.mip_dual_bound)
    seconds = time.perf_counter() - start
    status = _STATUS.get(m.prob.sol_status, _STATUS.get(m.prob.status, "not_solved"))
    objective = pulp.value(m.prob.objective) if status in ("optimal", "feasible") else None
    objective = float(objective) if objective is not None else None
    if best_bound is None and status == "optimal":
        best_bound = objective
    mip_gap = None
    if objective is not None and best_bound is not None:
        mip_gap = max(0.0, (objective - best_bound) / max(abs(objective), 1e-9))
    return SolveInfo(name, status, objective, best_bound, mip_gap, seconds)


def fix_integers_and_resolve(m: PlanModel, solver: SolverName = "auto") -> SolveInfo:
    """Fix the commitment blocks and node counts at their values and re-solve the LP, so the rows carry duals."""
    for var in [*m.commit.values(), *m.nodes.values()]:
        value = round(var.value() or 0.0)
        var.lowBound = value
        var.upBound = value
        var.cat = pulp.LpContinuous
    return solve_model(m, solver, gap=None)
