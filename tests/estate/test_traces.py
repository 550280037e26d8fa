"""Spot traces: Can't Be Late JSON and preemption-timestamp CSV → λ estimate and available runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finops_cli.errors import InputError
from finops_cli.estate.traces import read_trace


def test_cant_be_late_json(tmp_path: Path) -> None:
    p = tmp_path / "trace.json"
    p.write_text(
        json.dumps({"metadata": {"gap_seconds": 600, "region": "us-east-1"}, "data": [0] * 12 + [1] * 3 + [0] * 6})
    )
    t = read_trace(p)
    assert t.rate.preemptions == 1 and t.rate.available_hours == pytest.approx(3.0)
    assert t.rate.observed_hours == pytest.approx(3.5) and t.rate.preemptions_per_hour == pytest.approx(1 / 3)
    assert t.intervals_hours.tolist() == [pytest.approx(3.0)]


def test_csv_with_window(tmp_path: Path) -> None:
    p = tmp_path / "pre.csv"
    p.write_text(
        "timestamp,event\n2026-10-01T00:00:00Z,start\n2026-10-01T10:00:00Z,preempted\n"
        "2026-10-01T23:00:00Z,preempted\n2026-10-03T00:00:00Z,end\n"
    )
    t = read_trace(p)
    assert (t.rate.preemptions, t.rate.observed_hours) == (2, 48.0)
    assert sorted(t.intervals_hours.tolist()) == [13.0, 35.0]  # 10→23, and 23→48 wrapping to 0→10


def test_csv_without_window_uses_inter_arrival_times(tmp_path: Path) -> None:
    p = tmp_path / "pre.csv"
    p.write_text("timestamp\n2026-10-01T00:00:00Z\n2026-10-01T04:00:00Z\n2026-10-01T10:00:00Z\n")
    t = read_trace(p)
    assert t.rate.preemptions_per_hour == pytest.approx(2 / 10) and t.intervals_hours.tolist() == [4.0, 6.0]


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("t.json", '{"metadata": {"gap_seconds": 0}, "data": [0]}', "metadata.gap_seconds: expected a number > 0"),
        ("t.json", '{"metadata": {"gap_seconds": 60}, "data": [0, -1]}', "data[1]: expected a count of unavailable"),
        ("t.json", '{"metadata": {"gap_seconds": 60}, "data": [0, 0.5]}', "data[1]: expected a count of unavailable"),
        ("t.json", '{"metadata": {"gap_seconds": 60, "nodes": 2}, "data": [0, 3]}', "3 unavailable nodes in a 2-node"),
        ("t.json", '{"metadata": {"gap_seconds": 60}, "data": [1, 1]}', "unavailable at every step"),
        ("t.json", '{"data": [0, }', "invalid JSON"),
        ("t.csv", "time\n2026-10-01\n", "missing column 'timestamp'"),
        ("t.csv", "timestamp\n2026-10-01T00:00Z\nyesterday\n", "line 3: timestamp: expected an ISO 8601 time"),
        ("t.csv", "timestamp\n2026-10-01T00:00Z\n", "need at least two preemptions"),
    ],
)
def test_bad_traces_name_file_and_place(tmp_path: Path, name: str, text: str, expected: str) -> None:
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(InputError) as info:
        read_trace(p)
    assert name in str(info.value) and expected in str(info.value)
