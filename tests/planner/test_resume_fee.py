"""Issue 10 item 3: the spot resume fee F is in the cost per useful unit everywhere.

``(C·W + λ·W·F) × preference / θ`` is computed once (``core.pricing.useful_gpu_hour_price``) and the merit
order, the MILP's objective, ``totals.netc_overhead``, ``finops netc`` and the dispatch simulator all use it;
``stack``, ``netc`` and ``plan`` print the same unit price for the same pool.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from planner_helpers import demand, fleet, workload
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.core.netc import wall_hours_per_useful_hour
from finops_cli.core.netc_report import netc_row
from finops_cli.core.pricing import cost_per_unit, useful_gpu_hour_price
from finops_cli.core.stack import build_stack
from finops_cli.planner import plan_demand
from finops_cli.planner.document import plan_document
from finops_cli.report.format import unit_price
from finops_cli.sim.dispatch.engine import candidates

runner = CliRunner()


def _expected(c: float, lam: float, fee: float, pref: float, theta: float, tau_h: float = 0.5) -> float:
    w = wall_hours_per_useful_hour(lam, tau_h, 0.0, 0.1)
    return (c * w + lam * w * fee) * pref / theta


def test_unit_price_has_the_fee_in_stack_netc_frame_and_plan() -> None:
    f = fleet(
        {"id": "spot", "kind": "spot", "gpus": 8, "price_per_gpu_hour": 2.0, "interruptions_per_hour": 0.2,
         "resume_minutes": 6, "resume_cost": 12.0, "preference": 1.1},
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": 9.0},
    )  # fmt: skip
    w = workload("train", interruptible=True, throughput={"H100": 2.0})
    want = _expected(2.0, 0.2, 12.0, 1.1, 2.0)
    spot = f.substrate("spot")
    assert useful_gpu_hour_price(spot, w).total / 2.0 == pytest.approx(want)
    assert cost_per_unit(spot, w, f) == pytest.approx(want)
    stack = build_stack(w, f)
    assert next(s for s in stack.steps if s.substrate == "spot").cost_per_unit == pytest.approx(want)
    row = netc_row(w, spot, f, demand_units=100.0)
    assert row.cost_per_unit == pytest.approx(want)
    assert row.netc == pytest.approx(want * 100.0)  # NETC / demand is the merit order's price
    out = plan_demand(f, [w], demand(train=[4.0] * 6), n_blocks=6, solver="highs", gap=0)
    alloc = out.solution.allocations.set_index("substrate").loc["spot"]
    assert alloc["cost"] / alloc["units"] == pytest.approx(want)
    # NETC overhead = what preemptions add over C·pref: re-work, resumes AND the fees
    base = 2.0 * 1.1 / 2.0 * alloc["units"]
    assert alloc["netc_overhead"] == pytest.approx(alloc["cost"] - base)
    doc = plan_document(out, f, start=datetime(2026, 10, 1))
    assert next(a for a in doc.allocations if a.substrate == "spot").price_per_unit == pytest.approx(want, abs=1e-6)
    assert doc.totals.netc_overhead == pytest.approx(alloc["netc_overhead"], abs=0.01)


def test_the_fee_moves_work_to_the_really_cheaper_pool() -> None:
    """Spot at $2 with a $40 fee and λ = 0.25/h really costs ~$12.6 per useful hour: on-demand at $9 wins."""
    f = fleet(
        {"id": "spot", "kind": "spot", "gpus": 8, "price_per_gpu_hour": 2.0, "interruptions_per_hour": 0.25,
         "resume_cost": 40.0},
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": 9.0},
    )  # fmt: skip
    w = workload("train", interruptible=True)
    out = plan_demand(f, [w], demand(train=[3.0] * 4), n_blocks=4, solver="highs", gap=0)
    used = set(out.solution.allocations["substrate"])
    assert used == {"od"}
    assert build_stack(w, f).steps[0].substrate == "od"
    assert out.solution.planned_cost == pytest.approx(9.0 * 12)


def test_dispatch_bills_the_fee_per_preemption() -> None:
    import numpy as np

    from finops_cli.sim.dispatch.engine import Trace, simulate_dispatch

    f = fleet({"id": "spot", "kind": "spot", "gpus": 100, "price_per_gpu_hour": 1.0, "interruptions_per_hour": 0.5,
               "resume_cost": 7.0})  # fmt: skip
    w = workload("train", interruptible=True)
    n = 400
    tr = Trace(np.arange(n) * 0.1, np.zeros(n, dtype=np.int64), np.full(n, 2.0), ("train",))
    res = simulate_dispatch(f, [w], tr, seed=3)
    spot = next(s for s in res.by_substrate if s.substrate == "spot")
    assert spot.preemptions > 0
    assert spot.cost == pytest.approx(spot.gpu_hours * 1.0 + 7.0 * spot.preemptions)


@st.composite
def _fee_estates(draw):
    subs = [
        {"id": "pool", "kind": "spot", "gpus": draw(st.integers(1, 10)), "price_per_gpu_hour": draw(st.floats(0.5, 4)),
         "interruptions_per_hour": draw(st.floats(0.01, 0.3)), "resume_minutes": draw(st.sampled_from([0, 5])),
         "resume_cost": draw(st.floats(0, 30))},
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": draw(st.floats(2, 12))},
    ]  # fmt: skip
    for i in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["owned", "spot", "reserved"]))
        s = {"id": f"s{i}", "kind": kind, "gpus": draw(st.integers(1, 8)),
             "price_per_gpu_hour": draw(st.floats(0.1, 6)),
             "accelerator": draw(st.sampled_from(["H100", "A100"]))}  # fmt: skip
        if kind == "spot":
            s["interruptions_per_hour"] = draw(st.floats(0.0, 0.2))
        if kind == "reserved" and draw(st.booleans()):
            s["purchasable"] = {"block_gpus": 2, "price_per_gpu_hour": 1.5, "max_blocks": 2}
        subs.append(s)
    hours = draw(st.integers(2, 4))
    ws, cols = [], {}
    for j in range(draw(st.integers(1, 2))):
        ws.append(workload(f"w{j}", interruptible=True, deferrable=draw(st.booleans()),
                           throughput={"H100": 1.0, "A100": draw(st.floats(0.3, 1.0))}))  # fmt: skip
        cols[f"w{j}"] = draw(st.lists(st.floats(0, 12), min_size=hours, max_size=hours))
    return subs, ws, demand(**cols), draw(st.floats(0.5, 60))


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_fee_estates())
def test_raising_the_fee_never_lowers_cost_nor_moves_work_onto_the_pool(estate) -> None:
    """Exact optima x1 (fee F) and x2 (fee F + Δ): c1·x1 ≤ c1·x2 and c2·x2 ≤ c2·x1 give both properties."""
    subs, ws, d, delta = estate
    fee = subs[0]["resume_cost"]
    plans = []
    for f_value in (fee, fee + delta):
        subs[0] = {**subs[0], "resume_cost": f_value}
        f = fleet(*subs)
        out = plan_demand(f, ws, d, n_blocks=len(d), solver="highs", gap=0, duals=False)
        a = out.solution.allocations
        plans.append((out.solution.planned_cost, float(a.loc[a["substrate"] == "pool", "gpu_hours"].sum())))
    (cost1, pool1), (cost2, pool2) = plans
    assert cost2 >= cost1 - 1e-6 * max(1.0, cost1)
    assert pool2 <= pool1 + 1e-6 * max(1.0, pool1)


def _write_estate(tmp: Path) -> tuple[str, str]:
    """Two spot pools with fees, a preference, on-demand, owned; interruptible and stable work."""
    fleet_yaml = tmp / "fleet.yaml"
    fleet_yaml.write_text(
        """version: 1
currency: EUR
substrates:
  - {id: own, provider: onprem, kind: owned, accelerator: H100, jurisdiction: EU, gpus: 4, price_per_gpu_hour: 0.9}
  - {id: spot-a, provider: aws, kind: spot, accelerator: H100, jurisdiction: EU, gpus: 16, price_per_gpu_hour: 2.4,
     interruptions_per_hour: 0.08, resume_minutes: 9, resume_cost: 25, preference: 1.05}
  - {id: spot-b, provider: gcp, kind: spot, accelerator: A100, jurisdiction: EU, gpus: 16, price_per_gpu_hour: 1.3,
     interruptions_per_hour: 0.15, resume_minutes: 4, resume_cost: 6.5}
  - {id: od, provider: aws, kind: on_demand, accelerator: H100, jurisdiction: EU, price_per_gpu_hour: 7.5}
"""
    )
    wl_yaml = tmp / "workloads.yaml"
    wl_yaml.write_text(
        """version: 1
workloads:
  - {id: pretrain, unit: h100_hours, interruptible: true, deferrable: true, demand: {total: 4000},
     throughput: {H100: 1.0, A100: 0.45}, checkpoint: {interval_minutes: 40, write_minutes: 2}}
  - {id: finetune, unit: samples, interruptible: true, demand: {total: 90000},
     throughput: {H100: 30, A100: 14}}
"""
    )
    return str(fleet_yaml), str(wl_yaml)


def test_stack_netc_and_plan_print_the_same_unit_price(tmp_path: Path) -> None:
    fl, wl = _write_estate(tmp_path)
    hz = ("--horizon", "2026-10")
    r = runner.invoke(app, ["stack", "--fleet", fl, "--workloads", wl, *hz, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    stack = {(s["workload"], e["substrate"]): e["usd_per_unit"] for s in json.loads(r.stdout) for e in s["entries"]
             if e["segment"] == 0}  # fmt: skip
    r = runner.invoke(app, ["netc", "--fleet", fl, "--workloads", wl, *hz, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    netc = {(row["workload"], row["substrate"]): row["cost_per_unit"] for row in json.loads(r.stdout)}
    r = runner.invoke(app, ["plan", "--fleet", fl, "--workloads", wl, *hz, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    plan = {(a["workload"], a["substrate"]): a["price_per_unit"] for a in json.loads(r.stdout)["allocations"]}
    assert len(netc) == 4 and any(k[1].startswith("spot") for k in plan)
    for key, price in netc.items():
        assert round(stack[key], 2) == round(price, 2), key
        assert stack[key] == pytest.approx(price, rel=1e-9)
    for key, price in plan.items():
        assert stack[key] == pytest.approx(price, rel=1e-6, abs=1e-6), key
    # the dispatch simulator ranks by the same price
    est = api.estate(fl, wl)
    for w in est.workloads.workloads:
        cands, _ = candidates(w, est.fleet, "cost")
        for c in cands:
            key = (w.id, est.fleet.substrates[c.d].id)
            assert c.rank_per_unit[0] == pytest.approx(stack[key], rel=1e-9), key
    # and the text each command prints shows the same figure
    texts = [runner.invoke(app, [cmd, "--fleet", fl, "--workloads", wl, *hz]).stdout for cmd in ("stack", "netc")]
    texts.append(runner.invoke(app, ["plan", "--fleet", fl, "--workloads", wl, *hz, "--format", "markdown"]).stdout)
    for key, price in plan.items():
        if key[1].startswith("spot"):
            shown = unit_price(price, "EUR")
            assert all(shown in t for t in texts), (key, shown)
