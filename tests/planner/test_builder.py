"""Builder tests: coefficients and row families checked without solving."""

from __future__ import annotations

import numpy as np
import pytest
from planner_helpers import demand, fleet, workload

from finops_cli.core.pricing import spot_multiplier
from finops_cli.planner import plan_demand
from finops_cli.planner.blocks import load_duration_blocks
from finops_cli.planner.frame import build_frame
from finops_cli.planner.model import build_model


def _coefs(row) -> dict[str, float]:
    return {v.name: c for v, c in row.items()}


def _row(m, name: str):
    """A PuLP row by its family name (PuLP spells ``-`` as ``_``)."""
    return m.prob.get_constraint_by_name(name.replace("-", "_"))


def test_rows_and_coefficients():
    f = fleet(
        {"id": "own", "kind": "owned", "gpus": 10, "price_per_gpu_hour": 0.5, "comfortable_utilization": 0.8},
        {
            "id": "res",
            "kind": "reserved",
            "gpus": 0,
            "purchasable": {"block_gpus": 8, "price_per_gpu_hour": 1.0, "max_blocks": 3},
        },
        {"id": "eu", "kind": "on_demand", "price_per_gpu_hour": 0.1, "jurisdiction": "EU"},
        congestion=[{"up_to": 1.0, "multiplier": 2.0}],
    )
    w = workload("a", throughput={"H100": 2.0}, requires={"jurisdictions": ["US"]})
    frame = build_frame(f, [w], demand(a=[4, 6, 2]), n_blocks=3)
    m = build_model(frame)
    rows = frame.rows
    # the EU substrate is not compliant: no variable for it, ever
    assert "eu" not in set(rows["substrate"])
    # own: two segments (to 80 % at 0.5, to 100 % at 1.0), res: one segment at 0; 3 blocks each
    assert len(rows) == 3 * 3
    assert sorted(set(zip(rows["substrate"], rows["segment"], rows["usd_per_gpu_hour"], strict=True))) == [
        ("own", 0, 0.5),
        ("own", 1, 1.0),
        ("res", 0, 0.0),
    ]
    # demand row: throughput 2 on each of the 4 variables of the block, +1 on the slack, rhs = demand
    row = _row(m, "demand-a-0")
    coefs = _coefs(row)
    assert sorted(coefs.values()) == [1.0, 2.0, 2.0, 2.0]
    assert -row.constant == pytest.approx(4.0)  # full resolution: block b is hour b
    # capacity rows: own segment 0 holds 8 GPUs; res grows by 8 GPUs per block bought
    cap_own = _row(m, "cap-own-0-0")
    assert -cap_own.constant == pytest.approx(8.0)
    cap_res = _row(m, "cap-res-0-1")
    assert _coefs(cap_res)["commit_res"] == pytest.approx(-8.0)
    assert -cap_res.constant == pytest.approx(0.0)
    assert m.prob.variablesDict()["commit_res"].upBound == 3
    # objective: hours × price per variable; a commitment block costs 1.0 × 8 GPUs × 3 hours
    obj = _coefs(m.prob.objective)
    assert obj["commit_res"] == pytest.approx(24.0)
    assert obj[
        m.columns[int(rows.index[(rows["substrate"] == "own") & (rows["segment"] == 1)][0])].name
    ] == pytest.approx(1.0)


def test_blocks_keep_peak_and_totals():
    rng = np.random.default_rng(3)
    d = demand(a=rng.uniform(0, 10, 100), b=rng.uniform(0, 5, 100))
    b = load_duration_blocks(d, 7)
    assert b.n == 7 and b.hours.sum() == 100
    totals = (b.demand.to_numpy() * b.hours[:, None]).sum(axis=0)
    assert totals == pytest.approx(d.sum().to_numpy())
    peak = int((d["a"] + d["b"]).to_numpy().argmax())
    assert b.hours[0] == 1 and b.hour_block[peak] == 0
    assert b.demand.iloc[0].to_numpy() == pytest.approx(d.iloc[peak].to_numpy())
    full = load_duration_blocks(d, 500)
    assert full.n == 100 and (full.hours == 1).all()


def test_identical_workloads_grouped_and_dominated_rows_dropped():
    f = fleet(
        {"id": "own", "kind": "owned", "gpus": 10, "price_per_gpu_hour": 0.5},
        {"id": "od", "kind": "on_demand", "price_per_gpu_hour": 2.0},
        {"id": "od2", "kind": "on_demand", "price_per_gpu_hour": 3.0, "gpus": 50},
    )
    ws = [workload("a"), workload("b"), workload("c", throughput={"H100": 0.5})]
    frame = build_frame(f, ws, demand(a=[1, 2], b=[3, 4], c=[1, 1]), n_blocks=2)
    assert frame.groups == ["a", "c"]
    assert frame.members["b"][0] == "a"
    # od2 (capped, dearer than the unbounded od) can never be in an optimum
    assert "od2" not in set(frame.rows["substrate"])
    unpruned = build_frame(f, ws, demand(a=[1, 2], b=[3, 4], c=[1, 1]), n_blocks=2, prune=False, group=False)
    assert "od2" in set(unpruned.rows["substrate"]) and unpruned.groups == ["a", "b", "c"]


def test_spot_capacity_counts_the_wall_hours_of_its_work():
    """A useful GPU-hour on spot occupies W pool GPU-hours (re-work, resumes, checkpoint writes): cap row coef W."""
    f = fleet(
        {"id": "spot", "kind": "spot", "gpus": 8, "price_per_gpu_hour": 0.1, "interruptions_per_hour": 0.1,
         "resume_minutes": 6},
        {"id": "own", "kind": "owned", "gpus": 8, "price_per_gpu_hour": 0.5},
    )  # fmt: skip
    w = workload("a", interruptible=True, checkpoint={"interval_minutes": 30, "write_minutes": 1})
    frame = build_frame(f, [w], demand(a=[10.0]), n_blocks=1)
    m = build_model(frame)
    wall = spot_multiplier(f.substrate("spot"), w)
    assert wall > 1.05
    assert list(_coefs(_row(m, "cap-spot-0-0")).values()) == [pytest.approx(wall)]
    assert list(_coefs(_row(m, "cap-own-0-0")).values()) == [pytest.approx(1.0)]
    # solved: cheap spot fills, but its 8 GPUs hold only 8 / W useful GPU-hours; the owned pool takes the rest
    out = plan_demand(f, [w], demand(a=[10.0]), n_blocks=1, solver="highs", duals=False)
    hours = out.solution.allocations.set_index("substrate")["gpu_hours"]
    assert float(hours["spot"]) == pytest.approx(8.0 / wall)
    assert float(hours["own"]) == pytest.approx(10.0 - 8.0 / wall)
