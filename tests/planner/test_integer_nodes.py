"""Integer nodes (``integer_nodes=True``): on-demand and spot substrates with ``gpus_per_node`` are billed per
whole node; hand-computed optima, the ``nodes-{s}-{b}`` row family, capacity, duals and the plan document."""

from __future__ import annotations

from datetime import UTC, datetime

import highspy
import pulp
import pytest
from planner_helpers import demand, fleet, workload

from finops_cli.core.pricing import spot_multiplier
from finops_cli.planner import plan_demand
from finops_cli.planner.document import plan_document
from finops_cli.planner.frame import build_frame
from finops_cli.planner.matrix import NODE_TIE_BREAK
from finops_cli.planner.model import build_model
from finops_cli.planner.solve import fix_integers_and_resolve, solve_model

SOLVERS = ["cbc", "highs"]

# node: an 8-GPU on-demand node at 4.0/GPU-h (32/node-hour); gpu: per-GPU billing at 4.2 (slightly dearer)
NODE = {"id": "node", "kind": "on_demand", "gpus_per_node": 8, "price_per_gpu_hour": 4.0}
GPU = {"id": "gpu", "kind": "on_demand", "price_per_gpu_hour": 4.2}


def _gpu_hours(out, s: str) -> float:
    a = out.solution.allocations
    return float(a.loc[a["substrate"] == s, "gpu_hours"].sum())


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize(
    ("gpus", "node_gpu_hours", "gpu_gpu_hours", "cost"),
    [
        # 5 GPUs × 10 h: one node = 8 × 4.0 × 10 = 320 > 5 × 4.2 × 10 = 210 → per-GPU wins
        (5, 0.0, 50.0, 210.0),
        # 8 GPUs: a full node 320 < 8 × 4.2 × 10 = 336 → the node wins, no rounding
        (8, 80.0, 0.0, 320.0),
        # 13 GPUs: one full node + 5 per-GPU = 320 + 210 = 530 < two nodes 640 < 13 per-GPU 546
        (13, 80.0, 50.0, 530.0),
    ],
)
def test_rounding_decides_between_node_and_per_gpu_billing(solver, gpus, node_gpu_hours, gpu_gpu_hours, cost):
    out = plan_demand(fleet(NODE, GPU), [workload("a")], demand(a=[gpus] * 10), n_blocks=1, solver=solver,
                      integer_nodes=True)  # fmt: skip
    sol = out.solution
    assert _gpu_hours(out, "node") == pytest.approx(node_gpu_hours)
    assert _gpu_hours(out, "gpu") == pytest.approx(gpu_gpu_hours)
    assert sol.planned_cost == pytest.approx(cost)
    assert sol.node_rounding_cost == pytest.approx(0.0, abs=1e-6)
    assert sol.nodes["node_hours"].sum() == pytest.approx(node_gpu_hours / 8)
    # without integer nodes (same fleet) the cheaper per-GPU price takes everything: 5 × 4.0 × 10 = 200 etc.
    off = plan_demand(fleet(NODE, GPU), [workload("a")], demand(a=[gpus] * 10), n_blocks=1, solver=solver)
    assert off.solution.planned_cost == pytest.approx(gpus * 4.0 * 10)
    assert off.solution.nodes.empty and off.frame.nodes.empty


@pytest.mark.parametrize("solver", SOLVERS)
def test_rounding_is_charged_when_the_node_is_the_only_destination(solver):
    # 5 GPUs on one 8-GPU node for 10 h: usage 5 × 4 × 10 = 200, idle 3 GPUs × 4 × 10 = 120 of rounding
    out = plan_demand(fleet(NODE), [workload("a")], demand(a=[5] * 10), n_blocks=1, solver=solver, integer_nodes=True)
    sol = out.solution
    assert sol.usage_cost == pytest.approx(200.0)
    assert sol.node_rounding_cost == pytest.approx(120.0)
    assert sol.planned_cost == pytest.approx(320.0)
    assert sol.solve.objective == pytest.approx(320.0)
    row = sol.nodes.iloc[0]
    assert (row["substrate"], row["nodes"], row["node_hours"], row["wall_gpu_hours"]) == (
        "node",
        1,
        10.0,
        pytest.approx(50),
    )
    # the plan document reports node-hours and rounding per substrate and in the totals, inside planned_cost
    doc = plan_document(out, fleet(NODE), start=datetime(2026, 10, 1, tzinfo=UTC))
    by_s = {b.substrate: b for b in doc.by_substrate}
    assert by_s["node"].node_hours == pytest.approx(10.0)
    assert by_s["node"].node_rounding_cost == pytest.approx(120.0)
    assert by_s["node"].planned_cost == pytest.approx(320.0)
    assert doc.totals.node_rounding_cost == pytest.approx(120.0)
    assert doc.totals.planned_cost == pytest.approx(320.0)


@pytest.mark.parametrize("solver", SOLVERS)
def test_nodes_respect_capacity_and_vary_by_block(solver):
    # 12 GPUs of quota on 8-GPU nodes: at most floor(12/8) = 1 node; the rest spills to per-GPU billing.
    # Block 0 (peak, 10 GPUs): 1 node (8) + 2 per-GPU; block 1 (3 GPUs): per-GPU (3 × 4.2 < 32).
    capped = {**NODE, "gpus": 12}
    out = plan_demand(fleet(capped, GPU), [workload("a")], demand(a=[10, 3, 3]), n_blocks=2, solver=solver,
                      integer_nodes=True)  # fmt: skip
    assert out.frame.nodes.loc["node", "max_nodes"] == 1
    nodes = out.solution.nodes.set_index("block")
    assert nodes["nodes"].tolist() == [1, 0]
    assert _gpu_hours(out, "node") == pytest.approx(8.0)
    assert _gpu_hours(out, "gpu") == pytest.approx(2.0 + 6 * 1.0)
    assert out.solution.planned_cost == pytest.approx(32.0 + 8 * 4.2)


@pytest.mark.parametrize("solver", SOLVERS)
def test_duals_from_the_lp_with_node_counts_fixed(solver):
    # 13 GPUs: the node is full and fixed at 1; the marginal unit is per-GPU at 4.2 → clearing price 4.2
    out = plan_demand(fleet(NODE, GPU), [workload("a")], demand(a=[13] * 10), n_blocks=1, solver=solver,
                      integer_nodes=True)  # fmt: skip
    sol = out.solution
    assert sol.dual_solve is not None and sol.dual_solve.status == "optimal"
    assert sol.clearing_prices["usd_per_unit"].tolist() == pytest.approx([4.2])
    # the re-solve pins every node count at its optimum (an LP: no integer variable left)
    if solver == "cbc":
        m = build_model(out.frame)
        solve_model(m, solver, duals=False)
        fix_integers_and_resolve(m)
        nodes = [m.columns[j] for j in range(m.matrix.node_col0, m.matrix.unserved_col0)]
        assert [(v.lowBound, v.upBound, v.cat) for v in nodes] == [(1, 1, pulp.LpContinuous)]
    else:
        from finops_cli.planner.highs import fixed_integer_duals, solve_matrix

        m = build_model(out.frame, with_pulp=False)
        run, h = solve_matrix(m.matrix)
        again = fixed_integer_duals(h, m.matrix, run)
        node = m.matrix.node_col0
        assert again.status == "optimal" and h.getLp().col_lower_[node] == h.getLp().col_upper_[node] == 1.0
        assert all(t == highspy.HighsVarType.kContinuous for t in h.getLp().integrality_)  # empty: an LP


def _coefs(row) -> dict[str, float]:
    return {v.name: c for v, c in row.items()}


def _node_rows(m) -> dict[tuple[str, int], object]:
    """The ``nodes-{s}-{b}`` rows of the PuLP model by (substrate, block)."""
    return dict(zip(m.matrix.node_keys, m.rows[m.matrix.n_rows - len(m.matrix.node_keys) :], strict=True))


def _nodes(m) -> dict[tuple[str, int], object]:
    """The node-count variables by (substrate, block)."""
    return dict(zip(m.matrix.node_keys, m.columns[m.matrix.node_col0 : m.matrix.unserved_col0], strict=True))


def test_node_rows_and_objective_coefficients():
    spot = {
        "id": "spot",
        "kind": "spot",
        "gpus": 20,
        "gpus_per_node": 8,
        "price_per_gpu_hour": 2.0,
        "interruptions_per_hour": 0.1,
        "resume_minutes": 6,
        "comfortable_utilization": 0.5,
    }
    own = {"id": "own", "kind": "owned", "gpus": 16, "gpus_per_node": 8, "price_per_gpu_hour": 0.5}
    f = fleet(NODE, spot, own, congestion=[{"up_to": 1.0, "multiplier": 2.0}])
    w = workload("a", interruptible=True)
    frame = build_frame(f, [w], demand(a=[4, 6, 2]), n_blocks=3, integer_nodes=True)
    m = build_model(frame)
    # owned capacity is already paid (per-GPU marginal cost): no nodes; on-demand and spot: one per block
    node_rows, nodes = _node_rows(m), _nodes(m)
    assert sorted(nodes) == [(s, b) for s in ("node", "spot") for b in range(3)]
    assert sorted(node_rows) == sorted(nodes)
    assert node_rows[("spot", 1)].name == "nodes_spot_1"  # nodes-{s}-{b}, PuLP's sanitised spelling
    assert nodes[("spot", 0)].upBound == 2  # floor(20 / 8)
    assert nodes[("node", 0)].upBound is None  # uncapped on-demand
    assert m.has_integers
    # nodes-spot-1: W × x for each spot segment of block 1, −8 × N[spot,1], ≤ 0
    W = spot_multiplier(f.substrate("spot"), w)
    assert W > 1
    rows = frame.rows
    spot_x = [m.columns[i].name for i in rows.index[(rows["substrate"] == "spot") & (rows["block"] == 1)]]
    coefs = _coefs(node_rows[("spot", 1)])
    assert coefs.pop(nodes[("spot", 1)].name) == pytest.approx(-8.0)
    assert sorted(coefs) == sorted(spot_x) and len(spot_x) == 2  # segment 0 and the congested segment
    assert list(coefs.values()) == pytest.approx([W, W])
    assert node_rows[("spot", 1)].constant == 0
    # objective: a node costs q × G × h (block hours 1); used GPU-hours pay only what congestion and NETC add
    # above the idle price q·W (segment 0 of on-demand: 4.0 − 4.0 = 0; spot segment k: 2W·mult − 2W), + ε·q·W
    obj = _coefs(m.prob.objective)
    assert obj[nodes[("node", 2)].name] == pytest.approx(4.0 * 8)
    assert obj[nodes[("spot", 2)].name] == pytest.approx(2.0 * 8)
    x_spot = {int(r.segment): obj.get(m.columns[i].name, 0.0) for i, r in rows[rows["substrate"] == "spot"].iterrows()}
    eps = NODE_TIE_BREAK  # keeps work off paid-but-idle node GPUs beyond demand (free in money)
    assert x_spot == pytest.approx({0: 2.0 * W * eps, 1: 2.0 * W * 2.0 - 2.0 * W * (1 - eps)}, rel=1e-12, abs=1e-12)
    x_node = [obj.get(m.columns[i].name, 0.0) for i in rows.index[rows["substrate"] == "node"]]
    assert x_node == pytest.approx([4.0 * eps] * len(x_node), rel=1e-9)
    # owned rows keep their plain price
    x_own = {obj.get(m.columns[i].name, 0.0) for i in rows.index[(rows["substrate"] == "own") & (rows["segment"] == 0)]}
    assert x_own == {0.5}


def test_without_the_switch_gpus_per_node_changes_nothing():
    f = fleet(NODE, GPU)
    frame = build_frame(f, [workload("a")], demand(a=[5, 9]), n_blocks=2)
    m = build_model(frame)
    assert frame.nodes.empty and not _nodes(m) and not _node_rows(m) and not m.has_integers
    # and the dearer per-GPU destination is pruned as before (the node substrate is the cheap unbounded one)
    assert set(frame.rows["substrate"]) == {"node"}
    on = build_frame(f, [workload("a")], demand(a=[5, 9]), n_blocks=2, integer_nodes=True)
    assert set(on.rows["substrate"]) == {"node", "gpu"}


def test_cli_integer_nodes_json(tmp_path):
    import json
    from pathlib import Path

    import jsonschema
    import yaml
    from typer.testing import CliRunner

    from finops_cli.cli.app import app

    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "plan.schema.json").read_text())
    common = {"provider": "aws", "accelerator": "H100", "jurisdiction": "US", "comfortable_utilization": 1.0}
    fleet_doc = {
        "version": 1,
        "congestion": [{"up_to": 1.0, "multiplier": 1.0}],
        "substrates": [{**common, **NODE, "instance_type": "p5.48xlarge"}, {**common, **GPU}],
    }
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(fleet_doc))
    wl = {"version": 1, "workloads": [{"id": "a", "unit": "h", "demand": {"total": 130}, "throughput": {"H100": 1}}]}
    (tmp_path / "workloads.yaml").write_text(yaml.safe_dump(wl))
    args = ["plan", "--fleet", str(tmp_path / "fleet.yaml"), "--workloads", str(tmp_path / "workloads.yaml")]
    args += ["--horizon", "2026-10-01T00:00:10", "--format", "json"]
    runner = CliRunner()
    res = runner.invoke(app, [*args, "--integer-nodes"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, schema)
    # 13 GPUs for 10 h: one full node (320) + 5 per-GPU (210); the node row is reported, rounding included
    t, by_s = doc["totals"], {b["substrate"]: b for b in doc["by_substrate"]}
    assert t["planned_cost"] == pytest.approx(530.0)
    assert t["node_rounding_cost"] == pytest.approx(0.0, abs=0.01)
    assert by_s["node"]["node_hours"] == pytest.approx(10.0) and by_s["gpu"]["node_hours"] is None
    # without the switch: gpus_per_node is ignored, the cheaper per-GPU price takes all (13 × 4 × 10)
    plain = json.loads(runner.invoke(app, args).stdout)
    assert plain["totals"]["planned_cost"] == pytest.approx(520.0)
    assert plain["totals"]["node_rounding_cost"] is None


def test_reference_rounds_to_whole_nodes_too():
    # 5 GPUs × 10 h on the 8-GPU node substrate only: the greedy reference now pays 8 GPUs (a whole node) like
    # the plan; before it was charged 5 × 4.0 × 10 = 200 and the plan (320) looked 60 % dearer
    only = fleet(NODE)
    out = plan_demand(only, [workload("a")], demand(a=[5] * 10), n_blocks=1, integer_nodes=True)
    assert out.solution.planned_cost == pytest.approx(320.0)
    assert out.merit_order.cost == pytest.approx(320.0)
    assert out.merit_order.cost_by_substrate["node"] == pytest.approx(8 * 4.0 * 10)
    # without the switch both are fractional again
    off = plan_demand(only, [workload("a")], demand(a=[5] * 10), n_blocks=1)
    assert off.solution.planned_cost == off.merit_order.cost == pytest.approx(200.0)


def test_plan_without_the_switch_says_which_fractional_nodes_it_assumed():
    # 13 GPUs on the 8-GPU node substrate = 1.625 nodes for 10 h; whole nodes would add 3 idle GPUs × 10 h × 4.0
    out = plan_demand(fleet(NODE), [workload("a")], demand(a=[13] * 10), n_blocks=1)
    frac = out.solution.fractional_nodes
    assert frac["nodes"].tolist() == pytest.approx([1.625])
    assert frac["rounding_cost"].tolist() == pytest.approx([3 * 10 * 4.0])
    doc = plan_document(out, fleet(NODE), start=datetime(2026, 10, 1, tzinfo=UTC))
    t = doc.totals
    assert t.fractional_nodes == 1 and t.fractional_node_hours == pytest.approx(16.25)
    assert t.fractional_node_rounding_cost == pytest.approx(120.0)
    assert any("fractional nodes assumed" in n and "`integer_nodes`" in n for n in doc.notes)
    # 16 GPUs are two whole nodes: nothing fractional, nothing said
    whole = plan_demand(fleet(NODE), [workload("a")], demand(a=[16] * 10), n_blocks=1)
    assert whole.solution.fractional_nodes.empty
    # with the switch the fields are absent (nodes are whole)
    on = plan_demand(fleet(NODE), [workload("a")], demand(a=[13] * 10), n_blocks=1, integer_nodes=True)
    assert plan_document(on, fleet(NODE), start=datetime(2026, 10, 1, tzinfo=UTC)).totals.fractional_nodes is None
