"""finops ingest utilization through the CLI: flags, formats, summary, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "utilization"


def test_cli_ingest_samples_json_summary(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["ingest", "utilization", str(SAMPLES), "--store", str(tmp_path / "s"), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    by_format = {s["format"]: s for s in doc["sources"]}
    assert set(by_format) == {"dcgm", "prometheus", "csv"}
    assert by_format["csv"]["util_scale"] == 100.0  # percent detected
    assert by_format["dcgm"]["metrics"] == {"DCGM_FI_PROF_GR_ENGINE_ACTIVE": by_format["dcgm"]["samples"]}
    assert 0.99 < by_format["csv"]["coverage"] < 1.0  # the sample trace has a 3-day exporter outage
    assert doc["rows_written"] == sum(s["samples"] for s in doc["sources"])


def test_cli_mapping_flags_and_scale(tmp_path: Path) -> None:
    f = tmp_path / "trace.csv"
    f.write_text("when_ms,serial,busy,squad\n1790000000000,S1,0.5,ml\n1790000060000,S1,1,ml\n")
    args = ["ingest", "utilization", str(f), "--store", str(tmp_path / "s"), "--timestamp-col", "when_ms"]
    args += ["--device-col", "serial", "--util-col", "busy", "--team-col", "squad", "--util-scale", "100"]
    res = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "0–100" in res.stdout and "busy" in res.stdout
    res = CliRunner().invoke(app, ["waste", "--store", str(tmp_path / "s"), "--format", "json"])
    doc = json.loads(res.stdout)
    assert doc["groups"][0]["key"] == "ml"
    # 0.5 % and 1 % (percent forced by --util-scale 100), 60 s each: 0.3 + 0.6 busy seconds
    assert doc["totals"]["busy_hours"] * 3600 == pytest.approx(0.9)


def test_cli_bad_input_exits_2_without_traceback(tmp_path: Path) -> None:
    f = tmp_path / "trace.csv"
    f.write_text("timestamp,device_id,utilization\n2026-10-01T00:00:00Z,g0,abc\n")
    res = CliRunner().invoke(app, ["ingest", "utilization", str(f), "--store", str(tmp_path / "s")])
    assert res.exit_code == 2
    assert "row 1, column 'utilization'" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(app, ["ingest", "utilization", str(f), "--format", "nvml"])
    assert res.exit_code == 2
    res = CliRunner().invoke(
        app, ["ingest", "utilization", str(f), "--util-scale", "7", "--store", str(tmp_path / "s")]
    )
    assert res.exit_code == 2 and "--util-scale must be 1 or 100" in res.output
    assert not (tmp_path / "s" / "utilization").exists()
