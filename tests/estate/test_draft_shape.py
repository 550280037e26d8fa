"""Issue 26 item 6: a drafted estate keeps the shape of the bill. ``estate draft`` writes an hourly demand profile
from the billing lines' hours (utilisation where present), marks it inferred, and ``gate`` flags a plan whose
fractional-node rounding exceeds a threshold."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.estate.draft import spread_hourly
from tests.estate.focus_month import Month, write_focus_month

runner = CliRunner()


def _run(*args: object) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def drafted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Month, Path, Path]:
    root = tmp_path_factory.mktemp("shape")
    month = write_focus_month(root / "focus.csv")
    store = root / "store"
    code, _, err = _run("ingest", "billing", month.path, "--store", store)
    assert code == 0, err
    code, _, err = _run("estate", "draft", "--store", store, "--out", root / "estate")
    assert code == 0, err
    return month, store, root / "estate"


def test_the_draft_profile_is_the_bills_hours(drafted: tuple[Month, Path, Path]) -> None:
    month, _, estate = drafted
    text = (estate / "workloads.yaml").read_text()
    assert "demand: {profile: profiles/research.csv}" in text and "INFERRED: charge periods of 1 h" in text
    profile = pd.read_csv(estate / "profiles" / "research.csv")
    assert len(profile) == 720  # every hour of September, zeros included
    got = {pd.Timestamp(h).to_pydatetime(): u for h, u in zip(profile["hour"], profile["units"], strict=True) if u}
    assert got == pytest.approx(month.gpu_hours_by_hour)  # 8 GPUs, a 16-GPU burst, 8 again: not 6.3 flat
    assert max(got.values()) == 16.0 and sum(got.values()) == pytest.approx(sum(month.gpu_hours_by_hour.values()))


def test_plan_of_the_draft_needs_no_fractional_nodes_and_gate_flags_one_that_does(
    drafted: tuple[Month, Path, Path], tmp_path: Path
) -> None:
    month, store, estate = drafted
    fleet, workloads = estate / "fleet.yaml", estate / "workloads.yaml"
    shaped = tmp_path / "shaped.json"
    code, _, err = _run("plan", "--fleet", fleet, "--workloads", workloads, "--store", store, "--out", shaped)
    assert code == 0, err
    totals = json.loads(shaped.read_text())["totals"]
    assert totals["fractional_node_rounding_cost"] == pytest.approx(0.0, abs=0.01)
    assert totals["planned_cost"] == pytest.approx(month.gpu_cost, abs=0.01)  # the bill's work at the bill's rate
    # the same month's GPU-hours spread flat (what the draft wrote before): a fraction of a node every hour
    total = sum(month.gpu_hours_by_hour.values())
    flat_dir = tmp_path / "flat"
    flat_dir.mkdir()
    (flat_dir / "workloads.yaml").write_text(
        workloads.read_text().replace("{profile: profiles/research.csv}", f"{{total: {total}}}")
    )
    flat = tmp_path / "flat.json"
    code, _, err = _run("plan", "--fleet", fleet, "--workloads", flat_dir / "workloads.yaml", "--store", store,
                        "--out", flat)  # fmt: skip
    assert code == 0, err
    rounding = json.loads(flat.read_text())["totals"]["fractional_node_rounding_cost"]
    planned = json.loads(flat.read_text())["totals"]["planned_cost"]
    assert rounding > planned  # whole nodes would cost many times the plan
    code, _, err = _run("gate", "--plan", flat)
    assert code == 0 and "fractional node" in err and "--integer-nodes" in err  # a warning by default
    code, stdout, err = _run("gate", "--plan", flat, "--max-node-rounding-pct", "10", "--format", "json")
    assert code == 1, err
    rule = next(r for r in json.loads(stdout)["rules"] if r["name"] == "max-node-rounding-pct")
    assert rule["actual"] == pytest.approx(100 * rounding / planned) and not rule["passed"]
    code, _, err = _run("gate", "--plan", shaped, "--max-node-rounding-pct", "10")
    assert code == 0, err
    code, _, err = _run("gate", "--plan", shaped, "--max-node-rounding-pct", "-5")
    assert code == 2 and "--max-node-rounding-pct" in err


def test_spread_hourly_to_the_minute_and_clipped_to_the_month() -> None:
    start = pd.Timestamp("2026-10-01", tz="UTC")
    periods = pd.DataFrame(
        {
            "s": pd.to_datetime(["2026-10-01T00:30Z", "2026-09-30T23:00Z", "2026-10-01T02:00Z"], utc=True),
            "e": pd.to_datetime(["2026-10-01T01:30Z", "2026-10-01T01:00Z", "2026-10-01T02:00Z"], utc=True),
            "gpu_hours": [8.0, 4.0, 1.0],  # half-hour offset; starts the day before; no later end (one hour)
        }
    )
    hours = spread_hourly(periods, start, 4)
    assert list(hours) == pytest.approx([4.0 + 2.0, 4.0, 1.0, 0.0])  # the hour in September is not October's
