"""A (device, time) sample is stored once, whatever the file name or mapping options (issue 11, item 2).

The same trace ingested again with one more mapping option, or a copy with one extra column, used to be
stored a second time under another key: GPU-hours doubled and coverage read 194 %.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.store import Store


def _trace(path: Path, start: str, hours: int, devices: int = 6, extra_column: bool = False, seed: int = 7) -> Path:
    """A messy generic CSV: 60 s cadence with jitter-free gaps, teams, percent utilisation, one outage."""
    rng = np.random.default_rng(seed)
    times = pd.date_range(start, periods=hours * 60, freq="60s", tz="UTC")
    frames = []
    for d in range(devices):
        keep = np.ones(len(times), dtype=bool)
        if d == 2:
            keep[100:160] = False  # an exporter outage on one GPU
        frames.append(
            pd.DataFrame(
                {
                    "timestamp": times[keep].strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "gpu_uuid": f"GPU-{d:04d}",
                    "gpu_util": rng.uniform(0, 100, keep.sum()).round(1),
                    "squad": ["research", "serving", "platform"][d % 3],
                }
            )
        )
    frame = pd.concat(frames).sample(frac=1.0, random_state=seed)  # interleaved devices
    if extra_column:
        frame["hostname"] = "node-" + frame["gpu_uuid"].str[-1]
    frame.to_csv(path, index=False)
    return path


def _ingest(store: Path, *args: str) -> object:
    return CliRunner().invoke(app, ["ingest", "utilization", *args, "--store", str(store)])


def _totals(store: Path) -> dict:
    res = CliRunner().invoke(app, ["waste", "--store", str(store), "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["totals"]


def _assert_same_totals(after: dict, before: dict) -> None:
    """Equal up to float summation order (the engine sums in parallel)."""
    assert after.keys() == before.keys()
    for key, value in before.items():
        assert after[key] == (pytest.approx(value, rel=1e-12) if isinstance(value, float) else value), key


def test_same_trace_twice_with_different_options_keeps_gpu_hours(tmp_path: Path) -> None:
    trace = _trace(tmp_path / "trace.csv", "2026-10-01", 24)
    store = tmp_path / "s"
    assert _ingest(store, str(trace)).exit_code == 0
    before = _totals(store)
    assert before["coverage"] <= 1.0

    again = _ingest(store, str(trace), "--team-col", "squad")  # one more mapping option: another key
    assert again.exit_code == 2
    assert "already in the store" in again.output and "finops store remove csv-" in again.output
    assert "--replace" in again.output and "Traceback" not in again.output

    copy = _trace(tmp_path / "copy-with-host.csv", "2026-10-01", 24, extra_column=True)
    assert _ingest(store, str(copy)).exit_code == 2
    _assert_same_totals(_totals(store), before)  # the store is what it was

    replaced = _ingest(store, str(copy), "--team-col", "squad", "--replace")
    assert replaced.exit_code == 0, replaced.output
    assert "replaced stored source csv-" in replaced.output
    after = _totals(store)
    assert after["device_hours"] == pytest.approx(before["device_hours"])
    assert after["busy_hours"] == pytest.approx(before["busy_hours"])
    assert after["coverage"] == pytest.approx(before["coverage"]) and after["coverage"] <= 1.0
    manifest = Store(store).manifest()
    assert [e["source"] for e in manifest if e["dataset"] == "utilization"] == [str(copy)]


def test_adjacent_traces_are_kept_and_overlapping_ones_in_one_command_refused(tmp_path: Path) -> None:
    day1 = _trace(tmp_path / "day1.csv", "2026-10-01", 24, seed=1)
    day2 = _trace(tmp_path / "day2.csv", "2026-10-02", 24, seed=2)
    store = tmp_path / "s"
    res = _ingest(store, str(day1), str(day2), "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["rows_written"] > 0
    totals = _totals(store)
    assert 0.99 < totals["coverage"] <= 1.0

    half = _trace(tmp_path / "half.csv", "2026-10-03T12:00", 24, seed=3)
    other = _trace(tmp_path / "other.csv", "2026-10-03", 24, seed=4, extra_column=True)
    res = _ingest(store, str(half), str(other))
    assert res.exit_code == 2 and "counted twice" in res.output
    _assert_same_totals(_totals(store), totals)
