"""``finops simulate dispatch|market`` through the real CLI (CliRunner): formats, files, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.sim.dispatch.io import read_trace

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "market" / "laissezcloud_two_tenants.yaml"

FLEET = """\
version: 1
substrates:
  - {id: owned, provider: onprem, kind: owned, accelerator: H100, jurisdiction: US, gpus: 2,
     price_per_gpu_hour: 0.4, comfortable_utilization: 1.0}
  - {id: cloud, provider: aws, kind: on_demand, accelerator: H100, jurisdiction: US, gpus: 100,
     price_per_gpu_hour: 4.0}
  - {id: eu, provider: aws, kind: on_demand, accelerator: H100, jurisdiction: EU, gpus: 100,
     price_per_gpu_hour: 0.1}
"""
WORKLOADS = """\
version: 1
workloads:
  - {id: train, unit: h100_hours, demand: {total: 240}, throughput: {H100: 1.0}, requires: {jurisdictions: [US]}}
"""


@pytest.fixture
def estate(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    (tmp_path / "workloads.yaml").write_text(WORKLOADS)
    return tmp_path / "fleet.yaml", tmp_path / "workloads.yaml"


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def _dispatch(estate, *args: str):
    fleet, workloads = estate
    return _invoke("simulate", "dispatch", "--fleet", str(fleet), "--workloads", str(workloads), *args)


def test_dispatch_csv_trace_with_events_json(estate, tmp_path: Path):
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "timestamp,workload,units\n"
        "2026-10-01T00:00:00Z,train,1\n2026-10-01T00:10:00Z,train,1\n2026-10-01T00:20:00Z,train,1\n"
        "2026-10-01T03:00:00Z,train,1\n"
    )
    events = tmp_path / "events.yaml"
    events.write_text("- {type: outage, substrate: owned, start: 2026-10-01T02:30:00Z, end: 2026-10-01T04:00:00Z}\n")
    r = _dispatch(estate, "--trace", str(trace), "--events", str(events), "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert {"requests", "units", "cost", "by_substrate", "spills", "rejected", "slo_risk_units"} <= set(doc)
    by = {s["substrate"]: s for s in doc["by_substrate"]}
    assert by["owned"]["requests"] == 2  # 2 GPUs per hour; the 4th request falls in the outage
    assert by["cloud"]["requests"] == 2
    assert by["eu"]["requests"] == 0  # cheapest of all, but not compliant
    assert doc["cost"] == pytest.approx(2 * 0.4 + 2 * 4.0)
    assert doc["spills"]["by_reason"] == {"congestion": 0, "full": 1, "rate_limit": 0, "outage": 1}
    assert set(by["owned"]) >= {"substrate", "requests", "units", "cost", "peak_utilization"}


def test_dispatch_parquet_trace_table_and_markdown(estate, tmp_path: Path):
    trace = tmp_path / "trace.parquet"
    pq.write_table(pa.table({"timestamp": [0.0, 0.5, 1.0], "workload": ["train"] * 3, "units": [1.0, 1.0, 1.0]}), trace)
    r = _dispatch(estate, "--trace", str(trace))
    assert r.exit_code == 0, r.output
    assert "Dispatch by substrate" in r.stdout and "3 requests served" in r.stdout
    out = tmp_path / "report.md"
    r = _dispatch(estate, "--trace", str(trace), "--format", "markdown", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith("# Dispatch simulation") and "| owned |" in out.read_text()


def test_dispatch_generate_writes_a_seeded_trace(estate, tmp_path: Path):
    t1, t2 = tmp_path / "a.csv", tmp_path / "b.parquet"
    args = ("--generate", "--requests", "500", "--seed", "4", "--horizon", "2026-10-01:48", "--format", "json")
    r1 = _dispatch(estate, *args, "--trace", str(t1))
    r2 = _dispatch(estate, *args, "--trace", str(t2))
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output + r2.output
    assert json.loads(r1.stdout) == json.loads(r2.stdout)
    replay = read_trace(t1, ["train"])
    assert len(replay) == json.loads(r1.stdout)["requests"] + json.loads(r1.stdout)["rejected"]["requests"]
    assert replay.origin is not None and replay.origin.isoformat().startswith("2026-10-01T00:00")
    assert len(read_trace(t2, ["train"])) == len(replay)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("timestamp,workload,units\n0,train,1\n1,nope,1\n", "line 3: workload: unknown workload 'nope'"),
        ("timestamp,workload,units\n0,train,-1\n", "line 2: units: expected a number >= 0"),
        ("time,workload,units\n0,train,1\n", "missing column(s) ['timestamp']"),
    ],
)
def test_dispatch_bad_trace_is_one_clear_line(estate, tmp_path: Path, content: str, message: str):
    trace = tmp_path / "trace.csv"
    trace.write_text(content)
    r = _dispatch(estate, "--trace", str(trace))
    assert r.exit_code == 2
    assert message in r.output and "Traceback" not in r.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("- {type: rate_limit, substrate: owned, start: 0}\n", "events[0]: a rate_limit event needs capacity_factor"),
        ("- {type: outage, substrate: ghost, start: 0}\n", "events[0].substrate: unknown substrate 'ghost'"),
        ("- {type: melt, substrate: owned, start: 0}\n", "events[0].type: must be one of"),
        ("- {type: outage, substrate: owned, start: 0, typo: 1}\n", "events[0].typo: unknown key"),
    ],
)
def test_dispatch_bad_events_file(estate, tmp_path: Path, content: str, message: str):
    trace = tmp_path / "trace.csv"
    trace.write_text("timestamp,workload,units\n0,train,1\n")
    events = tmp_path / "events.yaml"
    events.write_text(content)
    r = _dispatch(estate, "--trace", str(trace), "--events", str(events))
    assert r.exit_code == 2
    assert message in r.output, r.output


def test_dispatch_needs_a_trace(estate):
    r = _dispatch(estate)
    assert r.exit_code == 2 and "--generate" in r.output


def test_market_all_policies_table():
    r = _invoke("simulate", "market", "--scenario", str(SAMPLE), "--policy", "all")
    assert r.exit_code == 0, r.output
    for name in ("fcfs", "fcfs-preempt", "spot", "on-demand", "renegotiate"):
        assert name in r.stdout
    assert "Trainium → A10" in r.stdout


def test_market_json_has_event_log_and_markdown_renders(tmp_path: Path):
    r = _invoke("simulate", "market", "--scenario", str(SAMPLE), "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["policy"] == "renegotiate"
    assert {"t", "type", "tenant", "accelerator", "price"} == set(doc["events"][0])
    assert {t["tenant"] for t in doc["tenants"]} == {"app-a", "app-b"}
    r = _invoke("simulate", "market", "--scenario", str(SAMPLE), "--policy", "all", "--format", "json", "--no-events")
    names = [p["policy"] for p in json.loads(r.stdout)["policies"]]
    assert names == ["fcfs", "fcfs-preempt", "spot", "on-demand", "renegotiate"]
    r = _invoke("simulate", "market", "--scenario", str(SAMPLE), "--format", "markdown")
    assert r.exit_code == 0 and r.stdout.startswith("# Market simulation")


def test_market_bad_scenario_and_policy(tmp_path: Path):
    bad = tmp_path / "s.yaml"
    bad.write_text("version: 1\naccelerators: []\ntenants: []\n")
    r = _invoke("simulate", "market", "--scenario", str(bad))
    assert r.exit_code == 2 and "accelerators" in r.output
    r = _invoke("simulate", "market", "--scenario", str(SAMPLE), "--policy", "lottery")
    assert r.exit_code == 2
