"""The JSON contract (schema published and validated), the billed baseline, the API and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pandas as pd
import pyarrow as pa
import pytest
import yaml
from planner_helpers import fleet
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.core.baseline import billed_baseline, match_billing
from finops_cli.estate.horizon import choose_horizon
from finops_cli.schema.plan import json_schema_text

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "docs" / "plan.schema.json").read_text())

FLEET = {
    "version": 1,
    "currency": "USD",
    "congestion": [{"up_to": 1.0, "multiplier": 1.0}],
    "substrates": [
        {
            "id": "own",
            "provider": "onprem",
            "kind": "owned",
            "accelerator": "H100",
            "region": "us-east",
            "instance_type": "hgx",
            "jurisdiction": "US",
            "gpus": 8,
            "price_per_gpu_hour": 0.4,
            "comfortable_utilization": 1.0,
        },
        {
            "id": "res",
            "provider": "coreweave",
            "kind": "reserved",
            "accelerator": "H100",
            "jurisdiction": "US",
            "gpus": 4,
            "committed_per_gpu_hour": 2.0,
            "comfortable_utilization": 1.0,
        },
        {
            "id": "od",
            "provider": "aws",
            "kind": "on_demand",
            "accelerator": "H100",
            "region": "us-east-1",
            "instance_type": "p5.48xlarge",
            "jurisdiction": "US",
            "price_per_gpu_hour": 6.0,
        },
    ],
}
WORKLOADS = {
    "version": 1,
    "workloads": [
        {"id": "train", "unit": "h", "demand": {"total": 240}, "deferrable": True, "throughput": {"H100": 1.0}},
        {"id": "serve", "unit": "h", "demand": {"profile": "serve.csv"}, "throughput": {"H100": 1.0}},
    ],
}


@pytest.fixture
def estate_files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(FLEET))
    (tmp_path / "workloads.yaml").write_text(yaml.safe_dump(WORKLOADS))
    rows = ["hour,units"] + [f"2026-10-01T{h:02d}:00:00Z,{6 + (h % 6)}" for h in range(24)]
    (tmp_path / "serve.csv").write_text("\n".join(rows) + "\n")
    return tmp_path / "fleet.yaml", tmp_path / "workloads.yaml"


def test_published_schema_is_up_to_date():
    assert (REPO / "docs" / "plan.schema.json").read_text() == json_schema_text(), (
        "regenerate: python -m finops_cli.schema.plan > docs/plan.schema.json"
    )


def _billing(n_hours: int = 24) -> pd.DataFrame:
    start = pd.Timestamp("2026-10-01", tz="UTC")
    rows = []
    for h in range(n_hours):
        ts = start + pd.Timedelta(hours=h)
        rows.append(("onprem", "us-east", "hgx", "Other", ts, 8 * 0.4 * 1.0))  # all 8 GPUs billed, busy or not
        rows.append(("aws", "us-east-1", "p5.48xlarge", "Standard", ts, 55.0))
        rows.append(("aws", "us-east-1", "p5.48xlarge", "Dynamic", ts, 20.0))  # spot: no spot substrate
    rows.append(("aws", "us-east-1", "p5.48xlarge", "Standard", start + pd.Timedelta(days=40), 999.0))  # outside
    return pd.DataFrame(
        rows,
        columns=["provider", "RegionId", "x_InstanceType", "PricingCategory", "ChargePeriodStart", "EffectiveCost"],
    ).assign(BillingCurrency="USD", billing_period="2026-10", BilledCost=lambda d: d["EffectiveCost"] * 0.9)


def _groups(bill: pd.DataFrame, start: datetime, end: datetime) -> pd.DataFrame:
    """Lines charged in [start, end) as one-line groups (what the store's BILLED_BASELINE query returns)."""
    inside = bill[(bill["ChargePeriodStart"] >= pd.Timestamp(start)) & (bill["ChargePeriodStart"] < pd.Timestamp(end))]
    return inside.assign(lines=1, cost=inside["EffectiveCost"])


def test_billed_baseline_matches_lines_to_substrates():
    f = fleet(*[{k: v for k, v in s.items()} for s in FLEET["substrates"]])
    bill = _billing()
    assert match_billing(bill.head(3), f).tolist() == ["own", "od", None]
    base = billed_baseline(_groups(bill, datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 10, 2, tzinfo=UTC)), f)
    assert base.lines_in_horizon == 72 and base.lines_matched == 48
    assert base.cost == pytest.approx(24 * (3.2 + 55.0))
    assert base.cost_by_substrate["od"] == pytest.approx(24 * 55.0)


def test_api_plan_with_billing_store_and_schema(estate_files, store):
    with store.transaction() as tx:
        tx.write_partitioned("billing", pa.Table.from_pandas(_billing(), preserve_index=False), key="t")
    est = api.estate(*estate_files)
    result = api.plan(est, store, horizon="2026-10-01T00:00:24", blocks=6)
    doc = result.document.model_dump(mode="json")
    jsonschema.validate(doc, SCHEMA)
    t = doc["totals"]
    assert doc["schema_version"] == 1 and doc["horizon"]["hours"] == 24
    # 6 blocks asked; the certification refines them until the hourly schedule is within 0.1 %
    cert = doc["certification"]
    assert doc["horizon"]["blocks"] == cert["blocks"] >= 6 and cert["certified"] and cert["gap"] <= 1e-3
    assert t["baseline_source"] == "billing"
    assert t["baseline_cost"] == pytest.approx(24 * (3.2 + 55.0))
    # prepaid reserved capacity is sunk and part of the plan's full cost
    assert t["sunk_cost"] == pytest.approx(4 * 2.0 * 24)
    assert t["planned_cost"] == pytest.approx(t["usage_cost"] + t["commitment_cost"] + t["sunk_cost"], abs=0.02)
    assert t["savings"] == pytest.approx(t["baseline_cost"] - t["planned_cost"], abs=0.02)
    assert sum(doc["cost_change_by_kind"].values()) == pytest.approx(-t["savings"], abs=0.05)
    by_lever = doc["savings_by_lever"]  # what earned it, to the cent (docs/economics.md §6)
    assert round(by_lever["residual"] + sum(r["saving"] for r in by_lever["levers"]), 2) == t["savings"]
    assert "savings_breakdown" not in doc or doc["savings_breakdown"] is None
    # what the report needs to say only what the data says: BilledCost beside the amortised baseline, which
    # substrates the bill covers, and each allocation's slo / interruptible
    assert t["baseline_billed_cost"] == pytest.approx(0.9 * t["baseline_cost"], abs=0.01)
    billed = {s["substrate"]: s["billed"] for s in doc["by_substrate"]}
    assert billed["own"] is True and billed["od"] is True and billed["res"] is False
    assert {(a["workload"], a["slo"], a["interruptible"]) for a in doc["allocations"]} <= {
        ("train", "standard", False),
        ("serve", "standard", False),
    }
    # all demand served: 240 train + Σ serve
    units = sum(a["units"] for a in doc["allocations"])
    assert units == pytest.approx(240 + sum(6 + (h % 6) for h in range(24)), rel=1e-6)


def test_cli_plan_json_and_out(estate_files, tmp_path):
    fleet_p, wl_p = estate_files
    out = tmp_path / "plan.json"
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            *("plan", "--fleet", str(fleet_p), "--workloads", str(wl_p), "--horizon", "2026-10-01T00:00:24"),
            *("--format", "json", "--solver", "highs", "--out", str(out)),
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["solver"]["name"] == "highs" and doc["totals"]["baseline_source"] == "merit_order"
    table = runner.invoke(
        app, ["plan", "--fleet", str(fleet_p), "--workloads", str(wl_p), "--horizon", "2026-10-01T00:00:24"]
    )
    assert table.exit_code == 0
    assert "Allocation by workload" in table.output and "Savings" in table.output and "\x1b[" not in table.output
    assert "Clearing price per unit" in table.output


def test_cli_out_replaces_stdout_and_save_plan_also_writes(estate_files, tmp_path):
    """--out means "write here instead of stdout" (format from --format, else the extension); --save-plan adds."""
    fleet_p, wl_p = estate_files
    base = ["plan", "--fleet", str(fleet_p), "--workloads", str(wl_p), "--horizon", "2026-10-01T00:00:24"]
    runner = CliRunner()
    as_json = runner.invoke(app, [*base, "--out", str(tmp_path / "p.json")])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads((tmp_path / "p.json").read_text())["schema_version"] == 1
    assert "Allocation by workload" not in as_json.stdout  # nothing on stdout: the output went to the file
    table = runner.invoke(app, [*base, "--format", "table", "--out", str(tmp_path / "p.txt")])
    assert table.exit_code == 0 and "Allocation by workload" in (tmp_path / "p.txt").read_text()
    both = runner.invoke(app, [*base, "--format", "markdown", "--save-plan", str(tmp_path / "saved.json")])
    assert both.exit_code == 0, both.output
    assert both.stdout.lstrip().startswith("#") or "|" in both.stdout  # markdown on stdout
    saved, first = json.loads((tmp_path / "saved.json").read_text()), json.loads((tmp_path / "p.json").read_text())
    assert saved["allocations"] == first["allocations"] and saved["totals"] == first["totals"]


def test_cli_exit_3_on_shortage_and_on_no_compliant_destination(estate_files, tmp_path):
    fleet_p, wl_p = estate_files
    data = yaml.safe_load(fleet_p.read_text())
    data["substrates"] = [s for s in data["substrates"] if s["id"] != "od"]  # no overflow left
    short = tmp_path / "short.yaml"
    short.write_text(yaml.safe_dump(data))
    runner = CliRunner()
    args = ["plan", "--workloads", str(wl_p), "--horizon", "2026-10-01T00:00:24"]
    res = runner.invoke(app, [*args, "--fleet", str(short)])
    assert res.exit_code == 3
    assert "serve" in res.output and "units short" in res.output and "Traceback" not in res.output
    for s in data["substrates"]:
        s["status"] = "down"
    eu = tmp_path / "eu.yaml"
    eu.write_text(yaml.safe_dump(data))
    res = runner.invoke(app, [*args, "--fleet", str(eu)])
    assert res.exit_code == 3 and "no compliant destination" in res.output and "status down" in res.output


def test_default_horizon_is_the_latest_billing_month(estate_files, store):
    est = api.estate(*estate_files)
    # no store: the month of the timestamped demand profile
    assert choose_horizon(None, est, None).horizon.start == datetime(2026, 10, 1, tzinfo=UTC)
    bill = _billing().assign(billing_period="2026-11", x_GpuHours=8.0)  # GPU usage in November
    with store.transaction() as tx:
        tx.write_partitioned("billing", pa.Table.from_pandas(bill, preserve_index=False), key="t")
    hz = choose_horizon(None, est, store).horizon
    assert hz.start == datetime(2026, 11, 1, tzinfo=UTC) and hz.hours == 720


def test_markdown_format(estate_files):
    fleet_p, wl_p = estate_files
    res = CliRunner().invoke(
        app,
        [
            *("plan", "--fleet", str(fleet_p), "--workloads", str(wl_p)),
            *("--horizon", "2026-10-01T00:00:24", "--format", "markdown"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("# Plan") and "| train | own | owned |" in res.stdout


def test_billed_baseline_refuses_a_currency_other_than_the_fleets():
    from finops_cli.errors import InputError

    f = fleet(*[dict(s) for s in FLEET["substrates"]])
    bill = _billing().assign(BillingCurrency="EUR")
    with pytest.raises(InputError, match=r"EUR but fleet\.yaml's currency is USD"):
        billed_baseline(_groups(bill, datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 10, 2, tzinfo=UTC)), f)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_cli_schedule_written_and_read_back(estate_files, tmp_path, suffix):
    fleet_p, wl_p = estate_files
    sched_p, out = tmp_path / f"schedule{suffix}", tmp_path / "plan.json"
    args = ["plan", "--fleet", str(fleet_p), "--workloads", str(wl_p), "--horizon", "2026-10-01T00:00:24"]
    res = CliRunner().invoke(app, [*args, "--blocks", "3", "--schedule", str(sched_p), "--save-plan", str(out)])
    assert res.exit_code == 0, res.output
    assert "Certified within" in res.output
    sched = pd.read_parquet(sched_p) if suffix == ".parquet" else pd.read_csv(sched_p, parse_dates=["time"])
    doc = json.loads(out.read_text())
    cert = doc["certification"]
    assert cert["certified"] and cert["gap"] <= 1e-3 and cert["lower_bound"] <= cert["upper_bound"]
    assert set(sched["hour"]) == set(range(24)) and str(sched["time"].iloc[0]).startswith("2026-10-01 00:00:00")
    # serve's demand is met hour by hour; train (deferrable, 240 units) over the day
    serve = sched[sched["workload"] == "serve"].groupby("hour")["units"].sum()
    assert serve.to_numpy() == pytest.approx([6 + (h % 6) for h in range(24)])
    assert sched.loc[sched["workload"] == "train", "units"].sum() == pytest.approx(240.0)
    # the schedule's money (+ sunk cost) is the certificate's schedule cost
    total = sched["cost"].sum() + doc["totals"]["commitment_cost"] + doc["totals"]["sunk_cost"]
    assert total == pytest.approx(cert["schedule_cost"], abs=0.02)


def test_cli_schedule_with_a_bad_suffix_is_refused_before_any_work(estate_files, tmp_path):
    fleet_p, wl_p = estate_files
    args = ["plan", "--fleet", str(fleet_p), "--workloads", str(wl_p), "--horizon", "2026-10-01T00:00:24"]
    res = CliRunner().invoke(app, [*args, "--schedule", str(tmp_path / "s.xlsx")])
    assert res.exit_code == 2 and ".parquet or .csv" in res.output
    assert not (tmp_path / "s.xlsx").exists()
    res = CliRunner().invoke(app, [*args, "--schedule", str(wl_p.with_suffix(".csv")), "--tolerance", "2"])
    assert res.exit_code == 2 and "--tolerance" in res.output


def test_cli_plan_prints_no_solver_banner_on_either_stream(estate_files, tmp_path):
    """HiGHS prints a banner at the C level when an instance is created (a CliRunner cannot see it): a real
    process, both streams captured; stdout is the JSON document alone and stderr has no solver chatter."""
    fleet_p, wl_p = estate_files
    proc = subprocess.run(
        [
            *(sys.executable, "-c", "from finops_cli.cli.app import main; main()"),
            *("plan", "--fleet", str(fleet_p), "--workloads", str(wl_p), "--horizon", "2026-10-01T00:00:24"),
            *("--format", "json", "--solver", "highs", "--blocks", "2"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "FINOPS_STORE": str(tmp_path / "store")},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["solver"]["name"] == "highs"
    for stream in (proc.stdout, proc.stderr):
        assert "Running HiGHS" not in stream and "THIRD_PARTY_NOTICES" not in stream and "Copyright" not in stream
