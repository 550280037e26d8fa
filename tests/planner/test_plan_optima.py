"""Hand-computed optima on tiny instances (both solvers)."""

from __future__ import annotations

import math

import pytest
from planner_helpers import demand, fleet, workload

from finops_cli.core.compliance import NoCompliantDestination
from finops_cli.core.netc import wall_hours_per_useful_hour
from finops_cli.planner import DemandExceedsCapacity, plan_demand

SOLVERS = ["cbc", "highs"]


def _alloc(out, w, s):
    a = out.solution.allocations
    row = a[(a["workload"] == w) & (a["substrate"] == s)]
    return float(row["gpu_hours"].sum())


@pytest.mark.parametrize("solver", SOLVERS)
def test_merit_order_fill_and_clearing_price(solver):
    # owned 10 GPUs at 0.5 fills first, on-demand (unbounded) at 4 takes the rest: 2 h × (10×0.5 + 5×4) = 50
    f = fleet(
        {"id": "own", "kind": "owned", "gpus": 10, "price_per_gpu_hour": 0.5},
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": 4.0},
    )
    out = plan_demand(f, [workload("a")], demand(a=[15, 15]), n_blocks=2, solver=solver)
    assert out.solution.planned_cost == pytest.approx(50.0)
    assert _alloc(out, "a", "own") == pytest.approx(20.0)
    assert _alloc(out, "a", "od") == pytest.approx(10.0)
    # the marginal unit is served on-demand: clearing price 4 per unit in every block
    assert out.solution.clearing_prices["usd_per_unit"].tolist() == pytest.approx([4.0, 4.0])


@pytest.mark.parametrize("solver", SOLVERS)
def test_capacity_binding_with_congestion_segments(solver):
    # 10 GPUs at 1.0, comfortable to 80 %; 80–90 % ×1.5, 90–100 % ×2; on-demand at 1.8 beats the last segment
    f = fleet(
        {"id": "own", "kind": "owned", "gpus": 10, "price_per_gpu_hour": 1.0, "comfortable_utilization": 0.8},
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": 1.8, "gpus": 100},
        congestion=[{"up_to": 0.9, "multiplier": 1.5}, {"up_to": 1.0, "multiplier": 2.0}],
    )
    out = plan_demand(f, [workload("a")], demand(a=[10]), n_blocks=1, solver=solver)
    # 8 × 1.0 + 1 × 1.5 + 1 × 1.8 (spill to on-demand rather than the ×2 segment)
    assert out.solution.planned_cost == pytest.approx(11.3)
    assert _alloc(out, "a", "od") == pytest.approx(1.0)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("od_price", [2.05, 2.5])
def test_spot_netc_multiplier_decides(solver, od_price):
    lam, tau, delta, resume = 0.2, 1.0, 0.05, 0.25
    f = fleet(
        {
            "id": "spot",
            "kind": "spot",
            "gpus": 100,
            "price_per_gpu_hour": 2.0,
            "interruptions_per_hour": lam,
            "resume_minutes": resume * 60,
        },
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": od_price},
    )
    w = workload("train", interruptible=True, checkpoint={"interval_minutes": tau * 60, "write_minutes": delta * 60})
    out = plan_demand(f, [w], demand(train=[10]), n_blocks=1, solver=solver)
    wmul = wall_hours_per_useful_hour(lam, tau, delta, resume)
    assert 2.05 < 2.0 * wmul < 2.5  # the instance straddles the NETC break-even
    expected = 10 * min(2.0 * wmul, od_price)
    assert out.solution.planned_cost == pytest.approx(expected)
    netc = float(out.solution.allocations["netc_overhead"].sum())
    assert netc == pytest.approx(10 * 2.0 * (wmul - 1) if od_price > 2.0 * wmul else 0.0)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize(("need_gpus", "buy"), [(4, 1), (1, 0)])
def test_commitment_bought_only_when_worth_it(solver, need_gpus, buy):
    # a 4-GPU block at 1.0/GPU-hour for the whole horizon vs on-demand at 2.0
    f = fleet(
        {
            "id": "res",
            "kind": "reserved",
            "gpus": 0,
            "purchasable": {"block_gpus": 4, "price_per_gpu_hour": 1.0, "max_blocks": 2},
        },
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": 2.0},
    )
    out = plan_demand(f, [workload("a")], demand(a=[need_gpus] * 10), n_blocks=3, solver=solver)
    c = out.solution.commitments
    assert int(c.loc[c["substrate"] == "res", "blocks"].iloc[0]) == buy
    expected = 4 * 1.0 * 10 if buy else need_gpus * 2.0 * 10
    assert out.solution.planned_cost == pytest.approx(expected)
    assert out.solution.commitment_cost == pytest.approx(40.0 * buy)


@pytest.mark.parametrize("solver", SOLVERS)
def test_deferrable_work_moves_into_the_cheap_block(solver):
    f = fleet(
        {"id": "own", "kind": "owned", "gpus": 10, "price_per_gpu_hour": 0.1},
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": 5.0},
    )
    serve = workload("serve")
    batch = workload("batch", deferrable=True, interruptible=True)
    out = plan_demand(f, [serve, batch], demand(serve=[10, 0], batch=[5, 5]), n_blocks=2, solver=solver)
    # serving fills the owned GPUs in hour 0; all 10 units of batch move to hour 1 on owned
    assert out.solution.planned_cost == pytest.approx(2.0)
    assert _alloc(out, "batch", "od") == 0.0
    # capped at 6 GPUs at once: 6 in the trough, the other 4 on-demand next to serving
    capped = workload("batch", deferrable=True, interruptible=True, max_parallel_gpus=6)
    out = plan_demand(f, [serve, capped], demand(serve=[10, 0], batch=[5, 5]), n_blocks=2, solver=solver)
    assert out.solution.planned_cost == pytest.approx(1.0 + 0.6 + 4 * 5.0)


def test_no_compliant_destination_names_reasons():
    f = fleet({"id": "eu", "kind": "on_demand", "price_per_gpu_hour": 1.0, "jurisdiction": "EU"})
    w = workload("us-only", requires={"jurisdictions": ["US"]})
    with pytest.raises(NoCompliantDestination) as err:
        plan_demand(f, [w], demand(**{"us-only": [1]}), n_blocks=1)
    assert err.value.exit_code == 3
    assert "us-only" in str(err.value) and "jurisdiction EU not in ['US']" in str(err.value)


@pytest.mark.parametrize("solver", SOLVERS)
def test_shortage_names_workload_block_and_missing_units(solver):
    f = fleet(
        {"id": "own", "kind": "owned", "gpus": 10, "price_per_gpu_hour": 0.5},
        {"id": "api", "kind": "api", "price_per_unit": {"other_unit": 1.0}},
    )
    with pytest.raises(DemandExceedsCapacity) as err:
        plan_demand(f, [workload("chat")], demand(chat=[12, 4, 4]), n_blocks=2, solver=solver)
    assert err.value.exit_code == 3
    msg = str(err.value)
    assert "chat: 2 units short in block 0" in msg and "peak hour" in msg
    out = plan_demand(f, [workload("chat")], demand(chat=[12, 4, 4]), n_blocks=3, solver=solver, allow_unserved=True)
    short = out.solution.unserved
    assert short["units"].sum() == pytest.approx(2.0)
    assert not math.isnan(out.solution.planned_cost)


@pytest.mark.parametrize("solver", SOLVERS)
def test_clearing_price_from_lp_with_commitments_fixed(solver):
    # need 5 GPUs: one 4-GPU block (1.0/GPU-h) + 1 GPU on-demand (2.0) is cheapest; the marginal unit costs 2.0
    f = fleet(
        {
            "id": "res",
            "kind": "reserved",
            "gpus": 0,
            "purchasable": {"block_gpus": 4, "price_per_gpu_hour": 1.0, "max_blocks": 2},
        },
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": 2.0},
    )
    out = plan_demand(f, [workload("a")], demand(a=[5] * 4), n_blocks=2, solver=solver)
    assert out.solution.dual_solve is not None and out.solution.dual_solve.status == "optimal"
    assert out.solution.planned_cost == pytest.approx(4 * (4 * 1.0 + 2.0))
    assert out.solution.clearing_prices["usd_per_unit"].tolist() == pytest.approx([2.0] * 2)


@pytest.mark.parametrize("solver", SOLVERS)
def test_reliability_mode_keeps_latency_critical_work_off_spot(solver):
    f = fleet(
        {"id": "spot", "kind": "spot", "gpus": 50, "price_per_gpu_hour": 1.0, "interruptions_per_hour": 0.0},
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": 3.0},
        reliability_penalty_per_gpu_hour=5.0,
    )
    chat = workload("chat", slo="latency_critical")
    batch = workload("batch", slo="offline", interruptible=True)
    d = demand(chat=[2, 2], batch=[3, 3])
    cost = plan_demand(f, [chat, batch], d, n_blocks=2, solver=solver, mode="cost")
    assert cost.solution.planned_cost == pytest.approx(2 * 5 * 1.0) and cost.solution.penalty == 0
    rel = plan_demand(f, [chat, batch], d, n_blocks=2, solver=solver, mode="reliability")
    assert _alloc(rel, "chat", "od") == pytest.approx(4.0) and _alloc(rel, "batch", "spot") == pytest.approx(6.0)
    assert rel.solution.planned_cost == pytest.approx(4 * 3.0 + 6 * 1.0)  # the penalty is not money
    assert rel.solution.penalty == 0.0
    # spot still beats nothing: with on-demand gone, latency-critical work takes spot and carries the penalty
    only_spot = fleet(
        {"id": "spot", "kind": "spot", "gpus": 50, "price_per_gpu_hour": 1.0, "interruptions_per_hour": 0.0},
        reliability_penalty_per_gpu_hour=5.0,
    )
    rel2 = plan_demand(only_spot, [chat], demand(chat=[2, 2]), n_blocks=2, solver=solver, mode="reliability")
    assert rel2.solution.planned_cost == pytest.approx(4.0) and rel2.solution.penalty == pytest.approx(20.0)


def _available_solvers() -> list[str]:
    """Solvers usable here, preferred first."""
    from finops_cli.planner import solve

    return [name for name, ok in (("highs", solve._highs_available()), ("cbc", solve._cbc_path())) if ok]


def test_highs_is_the_fallback_when_cbc_is_absent(monkeypatch):
    from finops_cli.planner import solve

    monkeypatch.setattr(solve, "_cbc_path", lambda: None)
    assert _available_solvers() == ["highs"]
    f = fleet({"id": "od", "kind": "on_demand", "price_per_gpu_hour": 2.0})
    out = plan_demand(f, [workload("a")], demand(a=[1, 2]), n_blocks=2, solver="cbc")
    assert out.solution.solve.name == "highs" and out.solution.planned_cost == pytest.approx(6.0)


@pytest.mark.parametrize("highs", [True, False])
@pytest.mark.parametrize("cbc", [True, False])
@pytest.mark.parametrize("asked", ["auto", "highs", "cbc"])
def test_solver_choice_per_availability(monkeypatch, asked, highs, cbc):
    """The choice (looked up lazily, #16) is the rule of ``_available_solvers``: the one asked for if present,
    else the other; ``auto`` prefers HiGHS; neither is an error."""
    from finops_cli.planner import solve

    monkeypatch.setattr(solve, "_highs_available", lambda: highs)
    monkeypatch.setattr(solve, "_cbc_path", lambda: "/usr/bin/cbc" if cbc else None)
    avail = _available_solvers()
    if not avail:
        with pytest.raises(RuntimeError, match="no MILP solver"):
            solve.resolve_solver(asked)
    else:
        assert solve.resolve_solver(asked) == (asked if asked in avail else avail[0])


def test_a_highs_plan_does_not_import_pulp():
    """PuLP (~60 ms to import) is only for CBC: choosing and running HiGHS must not load it (#16, the demo)."""
    import subprocess
    import sys

    code = (
        "import sys; from finops_cli.planner.solve import resolve_solver; from finops_cli.planner.model import "
        "build_model; assert resolve_solver('auto') == 'highs'; print('pulp' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False", done.stderr


def test_spot_that_would_never_finish_is_refused_with_a_note():
    f = fleet(
        {
            "id": "spot",
            "kind": "spot",
            "gpus": 50,
            "price_per_gpu_hour": 0.1,
            "interruptions_per_hour": 3.0,
            "resume_minutes": 30,
        },
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": 3.0},
    )
    w = workload("train", interruptible=True, checkpoint={"interval_minutes": 60})
    out = plan_demand(f, [w], demand(train=[1, 1]), n_blocks=2)
    assert "spot" not in set(out.frame.rows["substrate"])
    assert out.solution.planned_cost == pytest.approx(6.0)
    assert "never finish" in out.frame.refused["train→spot"][0]
