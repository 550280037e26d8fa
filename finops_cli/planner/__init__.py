"""The planner: the cheapest compliant substrate mix as a MILP (HiGHS or CBC), certified against the hourly optimum.

:func:`plan_demand` runs it end to end (pure, no I/O besides the solver's scratch files): build_frame →
build_model → solve_model → certify (refining the blocks) → duals → read_solution. docs/planner.md has the maths.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from finops_cli.core.pricing import Mode
from finops_cli.errors import InfeasibleError
from finops_cli.planner.baseline import DispatchResult, merit_order_dispatch
from finops_cli.planner.blocks import DEFAULT_BLOCKS
from finops_cli.planner.certify import DEFAULT_TOLERANCE, MAX_ROUNDS, Certificate, certify, refine_partition
from finops_cli.planner.frame import COLUMN_BUDGET, PlanFrame, build_frame
from finops_cli.planner.model import build_model
from finops_cli.planner.result import PlanSolution, read_solution, unserved_frame
from finops_cli.planner.solve import DEFAULT_GAP, SolverName, add_duals, resolve_solver, solve_model
from finops_cli.schema.estate import Fleet, Workload

__all__ = [
    "DEFAULT_BLOCKS",
    "DEFAULT_TOLERANCE",
    "DemandExceedsCapacity",
    "PlannerOutput",
    "plan_demand",
]


class DemandExceedsCapacity(InfeasibleError):
    """Demand above compliant capacity with no overflow: names workload, block and missing units."""

    def __init__(self, unserved: pd.DataFrame, frame: PlanFrame) -> None:
        self.unserved = unserved
        parts = []
        for r in unserved.sort_values("units", ascending=False).head(5).itertuples():
            where = "over the horizon (deferrable)" if r.block < 0 else _block_text(frame, int(r.block))
            parts.append(f"{r.workload}: {r.units:,.4g} units short {where} ({r.units_per_hour:,.4g} units/hour)")
        more = f"; and {len(unserved) - 5} more" if len(unserved) > 5 else ""
        super().__init__(
            "demand exceeds compliant capacity and no overflow destination is allowed: " + "; ".join(parts) + more
        )


def _block_text(frame: PlanFrame, block: int) -> str:
    hours = frame.blocks.hour_block
    first = int((hours == block).argmax())
    n = int(frame.blocks.hours[block])
    return f"in block {block} ({n} h from hour {first}{', the peak hour' if block == 0 and n == 1 else ''})"


@dataclass
class PlannerOutput:
    """The solved plan plus the greedy merit-order reference on the same blocks."""

    frame: PlanFrame
    solution: PlanSolution
    merit_order: DispatchResult
    build_seconds: float
    certificate: Certificate | None = None


def plan_demand(
    fleet: Fleet,
    workloads: list[Workload],
    demand: pd.DataFrame,
    *,
    n_blocks: int | None = None,
    mode: Mode = "cost",
    solver: SolverName = "auto",
    time_limit: float | None = None,
    gap: float | None = DEFAULT_GAP,
    duals: bool = True,
    allow_unserved: bool = False,
    prune: bool = True,
    group: bool = True,
    integer_nodes: bool = False,
    certify_plan: bool = True,
    tolerance: float = DEFAULT_TOLERANCE,
) -> PlannerOutput:
    """Plan ``demand`` (units/hour, one column per workload) on ``fleet`` (numeric prices).

    ``n_blocks`` None is :data:`DEFAULT_BLOCKS`, fewer above the :data:`~.frame.COLUMN_BUDGET`. Blocks are refined
    until the certified gap is within ``tolerance`` or ``time_limit`` (seconds, the whole plan) runs out;
    ``certify_plan=False`` skips that (hourly reference solves). Raises
    :class:`~finops_cli.core.compliance.NoCompliantDestination` or :class:`DemandExceedsCapacity` (both exit 3).
    """
    t0 = time.perf_counter()
    name = resolve_solver(solver)
    deadline = None if time_limit is None else t0 + time_limit
    hour_block = None
    build_seconds = 0.0
    rounds = 0
    while True:
        t_build = time.perf_counter()
        frame = build_frame(
            fleet,
            workloads,
            demand,
            n_blocks=DEFAULT_BLOCKS if n_blocks is None else n_blocks,
            mode=mode,
            prune=prune,
            group=group,
            integer_nodes=integer_nodes,
            hour_block=hour_block,
            column_budget=COLUMN_BUDGET if n_blocks is None else None,
        )
        model = build_model(frame, with_pulp=name == "cbc")
        build_seconds += time.perf_counter() - t_build
        left = None if deadline is None else max(1.0, deadline - time.perf_counter())
        solved = solve_model(model, name, time_limit=left, gap=gap, duals=False)  # type: ignore[arg-type]
        info = solved.info
        if info.status not in ("optimal", "feasible"):
            hint = "; raise `time_limit` or `gap`" if info.status == "not_solved" else ""
            raise InfeasibleError(
                f"the solver ({info.name}) stopped without a plan (status {info.status}){hint}",
                mentions=("time_limit", "gap"),
            )
        if not allow_unserved:
            short = unserved_frame(model, solved.values)
            if not short.empty:
                raise DemandExceedsCapacity(short, frame)
        if not certify_plan:
            cert = None
            break
        lower = info.best_bound if info.best_bound is not None else float(info.objective or 0.0)
        cert = certify(frame, model.matrix, solved.values, lower, demand, tolerance)
        # done: certified, out of rounds or time, or what is left is the MIP gap (refining cannot close that)
        if (
            cert.gap <= tolerance
            or rounds >= MAX_ROUNDS
            or (deadline is not None and time.perf_counter() > deadline)
            or float(cert.excess.sum()) <= tolerance * cert.upper_bound / 2
        ):
            break
        hour_block = refine_partition(frame, cert, demand[[w.id for w in workloads]])
        if hour_block is None:
            break
        rounds += 1
    before = solved.values
    if duals:
        solved = add_duals(model, solved)
    solution = read_solution(model, solved)
    if cert is not None:
        if not np.array_equal(solved.values, before):
            # the allocations are the LP's with the integers fixed (as the duals): schedule those
            cert = certify(frame, model.matrix, solved.values, cert.lower_bound, demand, tolerance)
        cert.rounds = rounds
    return PlannerOutput(frame, solution, merit_order_dispatch(frame), build_seconds, cert)
