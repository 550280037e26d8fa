"""Issue 26 item 4: ``finops simulate dispatch --plan`` replays a plan and agrees with it, or says why not.

The replay runs the plan's own allocation hour by hour under the planner's interruption model (Poisson at the
plan's λ per billed GPU-hour, the work since the last checkpoint lost, resume time and fee), so over many seeds
its mean realised cost must sit within the statistical error of the planned cost: held here on a seeded family
of generated estates, each planned by the real solver. The causes add up to the difference exactly, a pool the
plan fills leaves work unserved (and says so), and a plan that is not this estate's is refused with exit 2.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.core.netc import expected_cost_per_preemption, expected_lost_hours, lost_hours_at, netc_breakdown
from finops_cli.core.pricing import spot_terms
from finops_cli.planner import plan_demand
from finops_cli.planner.document import plan_document
from finops_cli.schema.estate import Fleet, Workload
from finops_cli.sim.dispatch.replay import CAUSES, PlanMismatch, replay_plan

START = datetime(2026, 10, 1, tzinfo=UTC)


def _estate(rng: np.random.Generator, hours: int, spot_gpus: float | None = None) -> tuple[Fleet, list[Workload]]:
    """A spot pool (random λ, resume time and fee, congestion above comfort) beside uncapped on-demand, with an
    interruptible checkpointed job, a non-interruptible service and (sometimes) a deferrable batch."""
    lam = float(rng.uniform(0.02, 0.4))
    fleet = Fleet.model_validate(
        {
            "version": 1,
            "congestion": [{"up_to": 0.95, "multiplier": 1.25}, {"up_to": 1.0, "multiplier": 1.6}],
            "substrates": [
                {
                    "id": "spot",
                    "provider": "aws",
                    "kind": "spot",
                    "accelerator": "H100",
                    "jurisdiction": "US",
                    "gpus": spot_gpus if spot_gpus is not None else float(rng.integers(60, 120)),
                    "price_per_gpu_hour": float(rng.uniform(1.0, 3.0)),
                    "interruptions_per_hour": lam,
                    "resume_minutes": float(rng.uniform(0, 12)),
                    "resume_cost": float(rng.choice([0.0, rng.uniform(0.5, 5.0)])),
                    "preference": float(rng.uniform(0.9, 1.2)),
                    "comfortable_utilization": float(rng.uniform(0.6, 1.0)),
                },
                {
                    "id": "od",
                    "provider": "aws",
                    "kind": "on_demand",
                    "accelerator": "H100",
                    "jurisdiction": "US",
                    "price_per_gpu_hour": float(rng.uniform(4.0, 8.0)),
                },
            ],
        }
    )
    base = {"unit": "h100_hours", "demand": {"total": 1.0}, "throughput": {"H100": 1.0}}
    workloads = [
        Workload.model_validate(
            {
                **base,
                "id": "train",
                "interruptible": True,
                "checkpoint": {
                    "interval_minutes": float(rng.uniform(10, 90)),
                    "write_minutes": float(rng.uniform(0, 3)),
                },
            }
        ),
        Workload.model_validate({**base, "id": "serve", "interruptible": False, "throughput": {"H100": 2.0}}),
        Workload.model_validate({**base, "id": "batch", "interruptible": True, "deferrable": True}),
    ]
    return fleet, workloads


def _with_spot(fleet: Fleet, **update: object) -> Fleet:
    spot = fleet.substrates[0].model_copy(update=update)
    return fleet.model_copy(update={"substrates": [spot, *fleet.substrates[1:]]})


def _plan(fleet: Fleet, workloads: list[Workload], demand: pd.DataFrame):
    out = plan_demand(fleet, workloads, demand)
    return out, plan_document(out, fleet, start=START)


def _demand(rng: np.random.Generator, hours: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "train": rng.uniform(5, 30, hours),
            "serve": rng.uniform(4, 40, hours),
            "batch": np.where(rng.random(hours) < 0.3, rng.uniform(0, 20, hours), 0.0),
        }
    )


@pytest.mark.parametrize("case", range(6))
def test_mean_realised_cost_agrees_with_the_plan_within_its_error(case: int) -> None:
    rng = np.random.default_rng(1000 + case)
    hours = int(rng.integers(12, 30))
    fleet, workloads = _estate(rng, hours)
    out, doc = _plan(fleet, workloads, _demand(rng, hours))
    assert any(a.kind == "spot" for a in doc.allocations)
    schedule = out.certificate.schedule if case % 2 else None  # the hourly schedule, or the allocations spread
    r = replay_plan(doc, fleet, workloads, schedule, seeds=200, seed=case * 1000)
    assert float(r.causes["unserved"].mean()) == 0.0  # the pool has room: every hour's work is done
    se = r.realised_cost_se
    assert se > 0
    assert abs(r.realised_cost - r.replayed_plan_cost) <= 4 * se, (r.realised_cost, r.replayed_plan_cost, se)
    # the same holds for the count of preemptions, the quantity the NETC multiplier prices
    n_se = r.preemptions.std(ddof=1) / math.sqrt(r.seeds)
    assert abs(r.preemptions.mean() - r.expected_preemptions) <= 4 * n_se
    # the causes add up to realised − planned, seed by seed
    total = sum(r.causes[c] for c in CAUSES)
    np.testing.assert_allclose(r.realised_costs - r.planned_cost, total, atol=1e-6)
    if schedule is None:
        assert r.replayed_plan_cost == pytest.approx(doc.totals.planned_cost, abs=0.01)
    else:  # the schedule's cost differs from the block plan's by at most the certified gap
        assert r.replayed_plan_cost == pytest.approx(doc.certification.schedule_cost, abs=0.05)


def test_a_pool_the_plan_fills_leaves_work_unserved_and_says_so() -> None:
    rng = np.random.default_rng(7)
    hours = 24
    fleet, workloads = _estate(rng, hours, spot_gpus=16.0)
    fleet = _with_spot(fleet, comfortable_utilization=1.0)
    demand = pd.DataFrame({"train": np.full(hours, 40.0), "serve": np.full(hours, 10.0), "batch": np.zeros(hours)})
    _, doc = _plan(fleet, workloads, demand)
    r = replay_plan(doc, fleet, workloads, seeds=200)
    assert r.causes["unserved"].mean() < 0  # work the full pool could not take by the end
    assert r.realised_cost < r.planned_cost
    assert sum(r.unserved_units.values()) > 0
    assert "unserved" in r.agreement()
    np.testing.assert_allclose(r.realised_costs - r.planned_cost, sum(r.causes[c] for c in CAUSES), atol=1e-6)


def test_one_seed_is_reproducible_and_seeds_are_consecutive() -> None:
    rng = np.random.default_rng(3)
    fleet, workloads = _estate(rng, 12)
    _, doc = _plan(fleet, workloads, _demand(rng, 12))
    many = replay_plan(doc, fleet, workloads, seeds=5, seed=10)
    one = replay_plan(doc, fleet, workloads, seeds=1, seed=12)
    assert one.realised_costs[0] == many.realised_costs[2]
    assert one.z is None and "`seeds`" in one.agreement()


def test_a_plan_priced_with_another_rate_is_refused() -> None:
    rng = np.random.default_rng(5)
    fleet, workloads = _estate(rng, 12)
    _, doc = _plan(fleet, workloads, _demand(rng, 12))
    faster = _with_spot(fleet, interruptions_per_hour=(fleet.substrates[0].interruptions_per_hour or 0) * 2)
    with pytest.raises(PlanMismatch, match="re-plan"):
        replay_plan(doc, faster, workloads, seeds=2)


# --- the economics the replay samples are the core's ---------------------------------------------------------


@pytest.mark.parametrize(("lam", "tau"), [(0.05, 0.5), (0.5, 1.0), (3.0, 0.25), (1e-8, 0.5)])
def test_sampled_loss_has_the_netc_mean(lam: float, tau: float) -> None:
    q = (np.arange(200_000) + 0.5) / 200_000  # midpoint quadrature of the inverse CDF
    mean = float(np.mean([lost_hours_at(x, lam, tau) for x in q]))
    assert mean == pytest.approx(expected_lost_hours(lam, tau), rel=1e-4)
    assert lost_hours_at(0.0, lam, tau) >= 0 and lost_hours_at(0.999999, lam, tau) <= tau


def test_netc_is_base_work_plus_expected_preemptions_at_their_expected_cost() -> None:
    c, t, lam, tau, delta, r, f = 3.0, 100.0, 0.2, 0.5, 0.02, 0.1, 2.0
    b = netc_breakdown(c, t, lam, tau, delta, r, f)
    per = expected_cost_per_preemption(c, lam, tau, r, f)
    assert b.netc == pytest.approx(c * t * (1 + delta / tau) + b.expected_preemptions * per)


def test_spot_terms_are_what_the_multiplier_uses() -> None:
    fleet, workloads = _estate(np.random.default_rng(0), 1)
    serve = workloads[1]  # non-interruptible: restarts, modelled as a one-hour interval
    terms = spot_terms(fleet.substrates[0], serve)
    assert terms.interval_hours == 1.0 and terms.write_hours == 0.0


# --- the CLI ------------------------------------------------------------------------------------------------

FLEET = """\
version: 1
currency: {currency}
substrates:
  - {{id: spot, provider: aws, kind: spot, accelerator: H100, jurisdiction: US, gpus: 64, price_per_gpu_hour: 2.0,
     interruptions_per_hour: 0.1, resume_minutes: 6, resume_cost: 1.0, comfortable_utilization: 1.0}}
  - {{id: {od}, provider: aws, kind: on_demand, accelerator: H100, jurisdiction: US, price_per_gpu_hour: 6.0}}
"""
WORKLOADS = """\
version: 1
workloads:
  - {{id: train, unit: h100_hours, interruptible: true, demand: {{total: {total}}}, throughput: {{H100: 1.0}},
     checkpoint: {{interval_minutes: 30, write_minutes: 1}}}}
  - {{id: serve, unit: h100_hours, demand: {{total: 480}}, throughput: {{H100: 1.0}}}}
"""


def _write(tmp_path: Path, name: str, currency: str = "USD", od: str = "od", total: int = 960) -> tuple[Path, Path]:
    d = tmp_path / name
    d.mkdir()
    (d / "fleet.yaml").write_text(FLEET.format(currency=currency, od=od))
    (d / "workloads.yaml").write_text(WORKLOADS.format(total=total))
    return d / "fleet.yaml", d / "workloads.yaml"


@pytest.fixture
def planned(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    fleet, workloads = _write(tmp_path, "estate")
    plan, schedule = tmp_path / "plan.json", tmp_path / "schedule.csv"
    r = CliRunner().invoke(
        app,
        ["plan", "--fleet", str(fleet), "--workloads", str(workloads), "--horizon", "2026-10-01:48",
         "--as-of", "2026-11-01", "--out", str(plan), "--schedule", str(schedule)],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    return fleet, workloads, plan, schedule


def _replay(fleet: Path, workloads: Path, *args: str):
    base = ["simulate", "dispatch", "--fleet", str(fleet), "--workloads", str(workloads)]
    return CliRunner().invoke(app, [*base, *args])


def test_cli_replay_json_has_planned_realised_and_causes(planned) -> None:
    fleet, workloads, plan, schedule = planned
    r = _replay(fleet, workloads, "--plan", str(plan), "--schedule", str(schedule), "--seeds", "50", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    planned_cost = json.loads(plan.read_text())["totals"]["planned_cost"]
    assert doc["planned_cost"] == planned_cost and doc["seeds"] == 50 and doc["source"] == "schedule"
    assert {c["cause"] for c in doc["causes"]} == set(CAUSES)
    assert doc["realised_cost"] == pytest.approx(doc["planned_cost"] + sum(c["amount"] for c in doc["causes"]))
    assert abs(doc["realised_cost"] - doc["replayed_plan_cost"]) <= 4 * doc["realised_cost_se"]
    assert doc["model"] and doc["preemptions"]["expected"] > 0
    table = _replay(fleet, workloads, "--plan", str(plan), "--seeds", "5")
    assert table.exit_code == 0 and "Realised − planned, by cause" in table.stdout
    md = _replay(fleet, workloads, "--plan", str(plan), "--seeds", "5", "--format", "markdown")
    assert md.exit_code == 0 and md.stdout.startswith("# Plan replay")


def test_cli_request_level_dispatch_says_what_the_plan_does_not_model(planned) -> None:
    fleet, workloads, _, _ = planned
    r = _replay(fleet, workloads, "--generate", "--requests", "200", "--horizon", "2026-10-01:48", "--format", "json")
    assert r.exit_code == 0, r.output
    notes = json.loads(r.stdout)["not_in_plan"]
    assert any("per-request loss" in n for n in notes) and any("--plan" in n for n in notes)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"currency": "EUR"}, "the plan is in USD, the fleet in EUR"),
        ({"od": "od2"}, "substrate 'od'"),
        ({"total": 2000}, "workload train: the plan serves"),
    ],
)
def test_cli_refuses_a_plan_of_another_estate(planned, tmp_path: Path, change: dict, message: str) -> None:
    _, _, plan, _ = planned
    fleet, workloads = _write(tmp_path, "other", **change)
    r = _replay(fleet, workloads, "--plan", str(plan), "--seeds", "2")
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["--horizon", "2026-10"],
        ["--as-of", "2026-12-01"],
        ["--generate"],
        ["--seeds", "0"],
    ],
)
def test_cli_refuses_options_that_contradict_the_plan(planned, args: list[str]) -> None:
    fleet, workloads, plan, _ = planned
    r = _replay(fleet, workloads, "--plan", str(plan), *args)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output


def test_cli_schedule_needs_a_plan(planned) -> None:
    fleet, workloads, _, schedule = planned
    r = _replay(fleet, workloads, "--schedule", str(schedule))
    assert r.exit_code == 2 and "--plan" in r.output
