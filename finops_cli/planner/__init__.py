"""The planner: the cheapest compliant substrate mix as a MILP (PuLP; CBC or HiGHS).

Pipeline (pure, no I/O besides the solver's scratch files)::

    build_frame (gate, prices, blocks, pruning, grouping) → build_model → solve_model
      → [fix integers, re-solve LP for duals] → read_solution

:func:`plan_demand` runs it end to end on a fleet with numeric prices and a demand table.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from finops_cli.core.pricing import Mode
from finops_cli.errors import InfeasibleError
from finops_cli.planner.baseline import DispatchResult, merit_order_dispatch
from finops_cli.planner.blocks import DEFAULT_BLOCKS
from finops_cli.planner.build import build_model
from finops_cli.planner.frame import PlanFrame, build_frame
from finops_cli.planner.result import PlanSolution, read_solution
from finops_cli.planner.solve import DEFAULT_GAP, SolverName, fix_integers_and_resolve, solve_model
from finops_cli.schema.estate import Fleet, Workload

__all__ = [
    "DEFAULT_BLOCKS",
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


def plan_demand(
    fleet: Fleet,
    workloads: list[Workload],
    demand: pd.DataFrame,
    *,
    n_blocks: int = DEFAULT_BLOCKS,
    mode: Mode = "cost",
    solver: SolverName = "auto",
    time_limit: float | None = None,
    gap: float | None = DEFAULT_GAP,
    duals: bool = True,
    allow_unserved: bool = False,
    prune: bool = True,
    group: bool = True,
    integer_nodes: bool = False,
) -> PlannerOutput:
    """Plan ``demand`` (units/hour, one column per workload) on ``fleet`` (numeric prices).

    ``integer_nodes`` provisions on-demand and spot substrates that set ``gpus_per_node`` in whole nodes
    per block and charges the idle remainder (docs/planner.md, "Integer nodes").

    Raises
    ------
    NoCompliantDestination
        A workload has nowhere compliant to run (exit 3, with the gate's reasons).
    DemandExceedsCapacity
        Demand is above compliant capacity and ``allow_unserved`` is false (exit 3).
    """
    import time

    t0 = time.perf_counter()
    frame = build_frame(
        fleet, workloads, demand, n_blocks=n_blocks, mode=mode, prune=prune, group=group, integer_nodes=integer_nodes
    )
    model = build_model(frame)
    build_seconds = time.perf_counter() - t0
    info = solve_model(model, solver, time_limit=time_limit, gap=gap)
    if info.status not in ("optimal", "feasible"):
        hint = "; raise --time-limit or --gap" if info.status == "not_solved" else ""
        raise InfeasibleError(f"the solver ({info.name}) stopped without a plan (status {info.status}){hint}")
    solution = read_solution(model, info)
    if not solution.unserved.empty and not allow_unserved:
        raise DemandExceedsCapacity(solution.unserved, frame)
    if duals and model.has_integers:
        dual_info = fix_integers_and_resolve(model, info.name)  # type: ignore[arg-type]
        if dual_info.status == "optimal":
            solution = read_solution(model, info, dual_info)
    return PlannerOutput(frame, solution, merit_order_dispatch(frame), build_seconds)
