"""``finops simulate market --experiment …`` at the small size: every experiment writes its JSON, markdown
and PNG, and its rows keep the market's invariants; the scenario families are seeded and documented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.sim.market import families
from finops_cli.sim.market.experiments import EXPERIMENTS

runner = CliRunner()


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, dict]:
    """Run every experiment once through the CLI at the small size, shrunk to 20 accelerators over 6 h
    (keeps the suite fast); the JSON each wrote, by name."""
    out = tmp_path_factory.mktemp("experiments")
    docs = {}
    for name in EXPERIMENTS:
        args = ["--experiment", name, "--size", "small", "--accelerators", "20", "--window-hours", "6", "--seeds", "2"]
        r = runner.invoke(app, ["simulate", "market", *args, "--out-dir", str(out)])
        assert r.exit_code == 0, r.output
        assert f"# Market experiment: {name}" in r.stdout
        for ext in ("json", "md", "png"):
            assert (out / f"{name}.{ext}").stat().st_size > 0
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        md = (out / f"{name}.md").read_text()
        assert f"![{name}]({name}.png)" in md and "| " in md
        docs[name] = json.loads((out / f"{name}.json").read_text())
    return docs


def test_contention_covers_levels_compositions_and_policies(outputs):
    doc = outputs["contention"]
    rows = doc["rows"]
    assert {r["composition"] for r in rows} == set(families.COMPOSITIONS)
    assert sorted({r["contention"] for r in rows}) == list(families.CONTENTION_LEVELS)
    assert {r["policy"] for r in rows} == {"fcfs", "spot", "renegotiate"}
    assert all(r["seeds"] == 2 and r["retained_ci"] is not None for r in rows)
    assert len(rows) == 3 * len(families.COMPOSITIONS) * len(families.CONTENTION_LEVELS)
    for r in rows:
        assert 0 < r["retained"] <= 1 and r["unfinished"] == 0
        if r["policy"] == "renegotiate":
            assert r["work_lost_hours"] == 0  # nobody is evicted; work is only redone by choice
        if r["policy"] == "fcfs":
            assert r["migrations_per_tenant"] == 0
    # more contention means more tenants in the same cluster
    for comp in families.COMPOSITIONS:
        n = [r["tenants"] for r in rows if r["composition"] == comp and r["policy"] == "fcfs"]
        assert n == sorted(n) and n[0] < n[-1]
    assert len(doc["summary"]["reduction_vs"]["fcfs"]) == len(families.COMPOSITIONS) * len(families.CONTENTION_LEVELS)


def test_overhead_sweeps_the_multiplier_against_fcfs(outputs):
    doc = outputs["overhead"]
    rows = doc["rows"]
    assert rows[0]["multiplier"] == 0 and len(rows) >= 5
    assert [r["multiplier"] for r in rows] == sorted(r["multiplier"] for r in rows)
    assert all(r["work_lost_hours"] == 0 and r["retained_ci"] is not None for r in rows)
    assert len({r["fcfs_retained"] for r in rows}) == 1  # FCFS never migrates: one run per seed
    assert "degenerates_to_fcfs_at_multiplier" in doc["summary"]


def test_misestimate_is_symmetric_around_exact(outputs):
    rows = outputs["misestimate"]["rows"]
    estimates = [r["estimate"] for r in rows]
    assert {0.95, 1.0, 1.05} <= set(estimates)
    assert min(estimates) * max(estimates) == pytest.approx(1.0)  # as far under as over, on a log scale
    exact = next(r for r in rows if r["estimate"] == 1.0)
    assert exact["retained_change"] == pytest.approx(0.0)


def test_volatility_ladder_from_none_to_tight_and_churn(outputs):
    rows = outputs["volatility"]["rows"]
    assert rows[0]["bid_clip"] is None and rows[0]["floor_fall_per_hour"] is None
    clips = [r["bid_clip"] for r in rows[1:]]
    assert clips == sorted(clips, reverse=True) and len(rows) >= 5
    assert all(r["churn_per_tenant_hour"] >= 0 for r in rows)


def test_frontier_has_a_budget_curve_and_baseline_points(outputs):
    doc = outputs["frontier"]
    curve = [r for r in doc["rows"] if r["policy"] == "renegotiate"]
    assert len(curve) >= 6 and curve[-1]["budget"] is None
    assert {r["policy"] for r in doc["rows"]} == {"renegotiate", "renegotiate-fixed", "fcfs", "spot", "on-demand"}
    assert len([r for r in doc["rows"] if r["policy"] == "renegotiate-fixed"]) == len(curve)  # the ablation
    assert all(r["retained"] is not None and 0 <= r["retained"] <= 1 for r in doc["rows"])
    for r in [r for r in doc["rows"] if r["policy"].startswith("renegotiate")]:  # a spending limit, both agents
        if r["budget"] is not None:
            assert r["cost"] <= r["budget"] + 1e-9, r
    # below its cheapest cost at base the probe cannot pay for the job anywhere: it does not launch
    assert all(r["cost"] == 0 and r["retained"] == 0 for r in curve if (r["budget_multiple"] or 9) < 1)


def test_operator_renegotiate_keeps_the_capped_group_under_its_cap_longer_than_fcfs(outputs):
    doc = outputs["operator"]
    for rho in {r["contention"] for r in doc["rows"]}:
        by = {r["policy"]: r for r in doc["rows"] if r["contention"] == rho}
        assert by["renegotiate"]["hours_over_cap"] <= by["fcfs"]["hours_over_cap"] + 1e-9  # the operator's aim
        assert by["renegotiate"]["work_lost_hours"] == 0  # steered by price, nobody evicted
    assert doc["series"] and all(isinstance(v, list) for v in doc["series"].values())


def test_families_are_seeded():
    a = families.generate("balanced", 1.0, n_accelerators=20, window_hours=4, seed=3)
    b = families.generate("balanced", 1.0, n_accelerators=20, window_hours=4, seed=3)
    c = families.generate("balanced", 1.0, n_accelerators=20, window_hours=4, seed=4)
    assert a == b and a != c
    tenants = families.generate("balanced", 2.0, n_accelerators=40, window_hours=8, seed=0).tenants
    assert {t.id.split("-")[2] for t in tenants} == set(families.TENANT_CLASSES)
    assert {t.id.split("-")[1] for t in tenants} == set(families.WORKLOADS)
    for t in tenants:  # services are stateless and run everywhere; the others checkpoint
        assert t.stateless == (t.id.split("-")[1] == "inference")
        assert len(t.execution_hours) == 5 or not t.stateless


def test_experiment_usage_errors_exit_2(tmp_path: Path):
    sample = Path(__file__).resolve().parents[2] / "samples" / "market" / "laissezcloud_two_tenants.yaml"
    cases = [
        (["--experiment", "contention", "--scenario", str(sample)], "not both"),
        ([], "--scenario"),
        (["--experiment", "frontier", "--accelerators", "2"], "--accelerators 2"),
        (["--experiment", "frontier", "--window-hours", "0"], "--window-hours"),
    ]
    for args, message in cases:
        r = runner.invoke(app, ["simulate", "market", *args, "--out-dir", str(tmp_path / "x")])
        assert r.exit_code == 2, r.output
        assert message in r.output
        assert "Traceback" not in r.output
    (tmp_path / "file").write_text("x")
    r = runner.invoke(app, ["simulate", "market", "--experiment", "frontier", "--out-dir", str(tmp_path / "file")])
    assert r.exit_code == 2 and "not a directory" in r.output


def test_urgency_rows_per_profile_and_policy_and_zero_urgency_pays_the_cheapest(outputs):
    doc = outputs["urgency"]
    profiles = {r["urgency"] for r in doc["rows"]}
    assert len(profiles) == 6 and {r["policy"] for r in doc["rows"]} == {"renegotiate", "spot", "on-demand"}
    rn = {r["urgency"]: r for r in doc["rows"] if r["policy"] == "renegotiate"}
    assert rn["0 $/h"]["cost"] <= min(r["cost"] for r in rn.values()) + 1e-9  # no urgency: the cheapest allocation


def test_seeds_in_worker_processes_give_the_same_result_as_in_one():
    """``--jobs N`` runs the seeds in N processes; the table does not depend on N."""
    from finops_cli.sim.market.experiments import run_experiment

    kw = {"size": "small", "n_accelerators": 20, "window_hours": 4.0, "seeds": 2}
    one = run_experiment("misestimate", jobs=1, **kw).as_dict()
    two = run_experiment("misestimate", jobs=2, **kw).as_dict()
    for doc in (one, two):
        del doc["summary"]["wall_seconds"]
    assert one == two and len(one["rows"]) == 7


def test_services_with_a_lifetime_report_throughput_retained(tmp_path: Path):
    args = ["--experiment", "contention", "--accelerators", "20", "--window-hours", "4", "--seeds", "2"]
    args += ["--out-dir", str(tmp_path), "--format", "json", "--services"]
    r = runner.invoke(app, ["simulate", "market", *args, "lifetime", "--jobs", "2"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["params"]["services"] == "lifetime"
    services = [r["retained_services"] for r in doc["rows"] if r["retained_services"] is not None]
    assert services and all(0 < v <= 1 for v in services)
    r = runner.invoke(app, ["simulate", "market", *args, "seasons"])
    assert r.exit_code == 2 and "Traceback" not in r.output
