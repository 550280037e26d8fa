"""Property tests on tiny random estates: solvers agree, reductions are exact, compliance is never broken."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from planner_helpers import demand, fleet, workload

from finops_cli.core.compliance import exclusion_reasons
from finops_cli.planner import plan_demand
from finops_cli.planner.frame import MIN_BUDGET_BLOCKS

JURIS = ["US", "EU"]


@st.composite
def estates(draw, *, single: bool = False):
    n_sub = draw(st.integers(2, 4))
    subs = []
    for i in range(n_sub):
        kind = draw(st.sampled_from(["owned", "on_demand", "spot", "reserved"]))
        s = {
            "id": f"s{i}",
            "kind": kind,
            "jurisdiction": draw(st.sampled_from(JURIS)),
            "accelerator": draw(st.sampled_from(["H100", "A100"])),
            "gpus": draw(st.integers(1, 12)),
            "price_per_gpu_hour": draw(st.floats(0.1, 5.0)),
            "comfortable_utilization": draw(st.sampled_from([0.8, 1.0])),
        }
        if kind == "spot":
            s["interruptions_per_hour"] = draw(st.floats(0.0, 0.1))
        if kind == "reserved" and not single and draw(st.booleans()):
            s["purchasable"] = {"block_gpus": draw(st.integers(1, 6)), "price_per_gpu_hour": 1.0, "max_blocks": 2}
        subs.append(s)
    subs.append({"id": "od", "kind": "on_demand", "jurisdiction": "US", "price_per_gpu_hour": 6.0})
    f = fleet(*subs, congestion=[{"up_to": 0.9, "multiplier": 1.3}, {"up_to": 1.0, "multiplier": 1.7}])
    n_w = 1 if single else draw(st.integers(1, 3))
    hours = draw(st.integers(2, 5))
    ws, cols = [], {}
    for j in range(n_w):
        ws.append(
            workload(
                f"w{j}",
                throughput={"H100": 1.0, "A100": draw(st.floats(0.3, 1.0))},
                requires={"jurisdictions": ["US"] if draw(st.booleans()) else JURIS},
                deferrable=False if single else draw(st.booleans()),
                interruptible=True,
            )
        )
        cols[f"w{j}"] = draw(st.lists(st.floats(0.0, 15.0), min_size=hours, max_size=hours))
    return f, ws, demand(**cols)


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(estates())
def test_solvers_and_reductions_agree_and_compliance_holds(estate):
    f, ws, d = estate
    hours = len(d)
    full_cbc = plan_demand(f, ws, d, n_blocks=hours, solver="cbc", gap=0, duals=False)
    full_highs = plan_demand(f, ws, d, n_blocks=hours, solver="highs", gap=0, duals=False)
    raw = plan_demand(f, ws, d, n_blocks=hours, solver="cbc", gap=0, duals=False, prune=False, group=False)
    coarse = plan_demand(f, ws, d, n_blocks=2, solver="cbc", gap=0, duals=False)
    obj = full_cbc.solution.solve.objective
    assert full_highs.solution.solve.objective == pytest.approx(obj, rel=1e-6, abs=1e-6)
    assert raw.solution.solve.objective == pytest.approx(obj, rel=1e-6, abs=1e-6)
    # load-duration blocks relax the hourly model: never dearer than full resolution
    assert coarse.solution.solve.objective <= obj * (1 + 1e-7) + 1e-7
    # the greedy merit order is a feasible plan, so the optimum is never dearer
    if full_cbc.merit_order.unserved_units == 0:
        assert full_cbc.solution.planned_cost <= full_cbc.merit_order.cost * (1 + 1e-7) + 1e-6
    # every allocation is to a compliant pair; every unit of demand is served
    by_id = {w.id: w for w in ws}
    for a in full_cbc.solution.allocations.itertuples():
        assert exclusion_reasons(by_id[a.workload], f.substrate(a.substrate)) == []
    served = full_cbc.solution.allocations.groupby("workload")["units"].sum()
    for w in ws:
        assert served.get(w.id, 0.0) == pytest.approx(float(d[w.id].sum()), rel=1e-6, abs=1e-6)


@settings(max_examples=examples(10), deadline=None)
@given(estates(single=True))
def test_single_workload_optimum_is_the_merit_order(estate):
    """One non-deferrable workload, no commitments: filling the cheapest segments first is optimal."""
    f, ws, d = estate
    out = plan_demand(f, ws, d, n_blocks=len(d), solver="highs", gap=0, duals=False)
    assert out.merit_order.unserved_units == 0
    assert out.solution.planned_cost == pytest.approx(out.merit_order.cost, rel=1e-7, abs=1e-6)


def test_default_blocks_shrink_to_the_column_budget_and_an_explicit_count_is_kept():
    from finops_cli.planner.frame import build_frame

    f = fleet(
        {"id": "own", "kind": "owned", "gpus": 6, "price_per_gpu_hour": 0.5},
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": 4.0},
    )
    ws = [workload(f"w{i}", throughput={"H100": 1.0 + i / 10}) for i in range(3)]  # 3 groups × 2 rows
    rng = np.random.default_rng(3)
    d = demand(**{f"w{i}": list(rng.uniform(1.0, 9.0, 48)) for i in range(3)})  # 48 different hours
    assert build_frame(f, ws, d, n_blocks=20).blocks.n > 6
    assert build_frame(f, ws, d, n_blocks=20, column_budget=36).blocks.n <= 6  # 6 columns a block
    assert build_frame(f, ws, d, n_blocks=20, column_budget=1).blocks.n <= MIN_BUDGET_BLOCKS  # the fewest it leaves
    assert build_frame(f, ws, d, n_blocks=48, column_budget=1).blocks.n == 48  # full resolution asked: kept
