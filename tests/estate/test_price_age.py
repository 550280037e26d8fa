"""Issue 26 item 5: a price that is old or thin is called out where decisions are made. ``plan`` and ``stack`` warn
on stderr (with the span the data actually covers), plan.json records the ages and spans, and ``gate`` warns or,
with ``--fail-on-stale-prices``, fails, from the ages the plan recorded (never the clock)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.store import Store
from tests.estate.spot_feed import messy_feed, write_feed

runner = CliRunner()
AS_OF = "2026-11-12T00:00:00Z"


def _run(*args: object) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


FLEET = """version: 1
currency: USD
substrates:
  - {id: old-spot, provider: aws, kind: spot, accelerator: H100, region: us-east-1, jurisdiction: US, gpus: 64,
     isolation: dedicated, interruptions_per_hour: 0.01,
     price_feed: {provider: aws, region: us-east-1, instance_type: p5.48xlarge, gpus_per_instance: 8, statistic: p90}}
  - {id: fresh-spot, provider: aws, kind: spot, accelerator: A10G, region: us-west-2, jurisdiction: US, gpus: 64,
     isolation: dedicated, interruptions_per_hour: 0.01,
     price_feed: {provider: aws, region: us-west-2, instance_type: g5.12xlarge, gpus_per_instance: 4, statistic: p90}}
  - {id: od, provider: aws, kind: on_demand, accelerator: H100, region: us-east-1, jurisdiction: US, gpus: 64,
     isolation: dedicated, price_per_gpu_hour: 12.29}
"""
WORKLOADS = """version: 1
workloads:
  - {id: train, team: research, slo: offline, interruptible: true, unit: gpu_hours, demand: {total: 5000},
     throughput: {H100: 1.0, A10G: 0.3}, checkpoint: {interval_minutes: 30, write_minutes: 0.5}}
"""


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, float]:
    root = tmp_path_factory.mktemp("prices")
    store = Store(root / "store")
    # 5.7 hours of p5 prices from May 2022 (1,647 days before the as-of): zones and products as AWS answers
    old = messy_feed(instance_type="p5.48xlarge", gpus=8, accelerator="H100", usd_per_instance_hour=40.0,
                     start="2022-05-10T02:00", end="2022-05-10T07:42", mean_gap_hours=0.4, seed=3)  # fmt: skip
    # 45 days of g5 prices up to the day before the as-of: a full window, many changes
    fresh = messy_feed(region="us-west-2", start="2026-09-27", end="2026-11-11", seed=4)
    write_feed(store, old, fresh)
    (root / "fleet.yaml").write_text(FLEET)
    (root / "workloads.yaml").write_text(WORKLOADS)
    linux = old[old["product_description"] == "Linux/UNIX"]["timestamp"]  # the product an AWS feed prices
    covered = (linux.max() - linux.min()).total_seconds() / 3600.0
    return root / "fleet.yaml", root / "workloads.yaml", store.root, covered


def test_plan_and_stack_warn_on_old_and_thin_prices_and_plan_json_records_them(
    estate: tuple[Path, Path, Path, float], tmp_path: Path
) -> None:
    fleet, workloads, store, covered = estate
    plan = tmp_path / "plan.json"
    common = ("--store", store, "--horizon", "2026-10", "--as-of", AS_OF)
    code, _, err = _run("plan", "--fleet", fleet, "--workloads", workloads, *common, "--out", plan)
    assert code == 0, err
    doc = json.loads(plan.read_text())
    prices = {p["substrate"]: p for p in doc["prices"]}
    old, fresh = prices["old-spot"], prices["fresh-spot"]
    assert old["age_days"] == 1647 and old["window_days"] == 30
    assert old["covered_hours"] == pytest.approx(covered, abs=1e-3) and covered < 5.7  # first to last change
    assert fresh["covered_hours"] == pytest.approx(30 * 24) and fresh["age_days"] == 12  # ends with the horizon
    assert "warning: price of old-spot: the spot-price feed's newest price is 1,647 days old, older than 30 days" in err
    assert f"price of old-spot: p90 of {old['covered_hours']:.1f} h of data" in err
    assert "not the 30 days of its window" in err
    assert "fresh-spot" not in " ".join(line for line in err.splitlines() if line.startswith("warning"))
    code, _, err_stack = _run("stack", "--fleet", fleet, "--workloads", workloads, *common)
    assert code == 0, err_stack
    assert "1,647 days old" in err_stack and "h of data" in err_stack
    # a looser limit: old enough to pass, still thin
    code, _, err = _run("stack", "--fleet", fleet, "--workloads", workloads, *common, "--max-price-age", "2000")
    assert code == 0 and "days old" not in err and "h of data" in err
    code, _, err = _run("plan", "--fleet", fleet, "--workloads", workloads, *common, "--max-price-age", "-1")
    assert code == 2 and "--max-price-age" in err and "Traceback" not in err


def test_gate_warns_or_fails_on_stale_prices_from_the_recorded_ages(
    estate: tuple[Path, Path, Path, float], tmp_path: Path
) -> None:
    fleet, workloads, store, _ = estate
    plan = tmp_path / "plan.json"
    code, _, err = _run("plan", "--fleet", fleet, "--workloads", workloads, "--store", store, "--horizon", "2026-10",
                        "--as-of", AS_OF, "--out", plan)  # fmt: skip
    assert code == 0, err
    code, _, err = _run("gate", "--plan", plan)
    assert code == 0 and "1,647 days old" in err and "h of data" in err
    code, stdout, err = _run("gate", "--plan", plan, "--fail-on-stale-prices", "--format", "json")
    assert code == 1, err
    result = json.loads(stdout)
    rule = next(r for r in result["rules"] if r["name"] == "stale-prices")
    assert rule["passed"] is False and rule["actual"] == 1 and "old-spot" in rule["message"]
    assert "stale-prices" in err
    code, _, err = _run("gate", "--plan", plan, "--fail-on-stale-prices", "--max-price-age", "1700")
    assert code == 0, err
    # the gate reads the ages plan.json recorded, not the clock: a plan whose prices were young passes
    doc = json.loads(plan.read_text())
    for p in doc["prices"]:
        if p["age_days"] is not None:
            p["age_days"] = 2
    young = tmp_path / "young.json"
    young.write_text(json.dumps(doc))
    code, stdout, err = _run("gate", "--plan", young, "--fail-on-stale-prices", "--format", "github")
    assert code == 0, err
    assert "h of data" in stdout  # thin is still said, in the comment too
