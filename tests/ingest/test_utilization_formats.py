"""Utilisation parsers: dcgm-exporter scrapes, Prometheus range JSON, generic CSV with mapping flags."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.compute as pc
import pytest

from finops_cli.errors import InputError
from finops_cli.ingest.utilization import CsvMapping, ingest_utilization
from finops_cli.store import Store

SHARED = Path(__file__).resolve().parents[3] / "shared" / "formats"


def _scrape(
    values: dict[str, tuple[float | None, float | None]], host: str = "node-1", ts_ms: int | None = None
) -> str:
    """dcgm-exporter text: device -> (GPU_UTIL 0-100 or None, PROF_GR_ENGINE_ACTIVE 0-1 or None)."""
    suffix = f" {ts_ms}" if ts_ms is not None else ""
    lines = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    labels = {
        dev: f'gpu="{i}",UUID="{dev}",modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",'
        f'namespace="research",pod="p-{i}"'
        for i, dev in enumerate(values)
    }
    for dev, (util, _) in values.items():
        if util is not None:
            lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels[dev]}}} {util}{suffix}")
    lines += ["# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio.", "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge"]
    for dev, (_, prof) in values.items():
        if prof is not None:
            lines.append(f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{labels[dev]}}} {prof}{suffix}")
    return "\n".join(lines) + "\n"


def _rows(store: Store) -> list[dict]:
    table = store.read("utilization")
    assert table is not None
    return sorted(table.to_pylist(), key=lambda r: (r["device_id"], r["timestamp"]))


# ------------------------------------------------------------------------------------------------ dcgm
def test_dcgm_directory_prefers_prof_metric_and_falls_back(tmp_path: Path, store: Store) -> None:
    d = tmp_path / "scrapes"
    d.mkdir()
    for i, minute in enumerate((0, 1, 2)):
        # GPU-a has both metrics (PROF wins); GPU-b only the coarse 0-100 counter
        text = _scrape({"GPU-a": (97, 0.5 + 0.1 * i), "GPU-b": (40, None)})
        (d / f"scrape-2026-10-01T00-{minute:02d}-00Z.prom").write_text(text)
    result = ingest_utilization(store, [d])
    [src] = result.sources
    assert src.format == "dcgm"
    assert src.metrics == {"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 3, "DCGM_FI_DEV_GPU_UTIL": 3}
    rows = _rows(store)
    a = [r for r in rows if r["device_id"] == "GPU-a"]
    b = [r for r in rows if r["device_id"] == "GPU-b"]
    assert [r["utilization"] for r in a] == pytest.approx([0.5, 0.6, 0.7])
    assert [r["utilization"] for r in b] == pytest.approx([0.4, 0.4, 0.4])
    assert {r["interval_s"] for r in rows} == {60.0}
    assert a[0]["host"] == "node-1" and a[0]["accelerator"] == "H100" and a[0]["team"] == "research"
    assert a[0]["resource_id"] == "node-1"  # no resource label: the host identifies the billed machine


def test_dcgm_sample_timestamps_and_gzip(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "metrics.prom.gz"
    f.write_bytes(gzip.compress(_scrape({"GPU-a": (None, 0.25)}, ts_ms=1_790_000_000_000).encode()))
    ingest_utilization(store, [f], fmt="dcgm")
    [row] = _rows(store)
    assert row["timestamp"].timestamp() == 1_790_000_000
    assert row["utilization"] == 0.25


def test_dcgm_without_any_timestamp_is_a_clear_error(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "metrics.prom"
    f.write_text((SHARED / "dcgm-exporter.prom").read_text() if SHARED.exists() else _scrape({"GPU-a": (1, 0.1)}))
    with pytest.raises(InputError, match="no timestamp"):
        ingest_utilization(store, [f])
    assert store.read("utilization") is None


def test_dcgm_garbage_is_an_input_error(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "scrape-1790000000.prom"
    f.write_text('DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0" 0.5\n')
    with pytest.raises(InputError, match="Prometheus text"):
        ingest_utilization(store, [f], fmt="dcgm")


# ------------------------------------------------------------------------------------------ prometheus
def _range(series: list[tuple[str, str, list[tuple[int, str]]]]) -> dict:
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": {"__name__": name, "UUID": dev, "Hostname": "h", "gpu": "0"}, "values": vals}
                for name, dev, vals in series
            ],
        },
    }


def test_prometheus_range_prefers_prof_and_scales_gpu_util(tmp_path: Path, store: Store) -> None:
    t0 = 1_790_000_000
    doc = _range(
        [
            ("DCGM_FI_DEV_GPU_UTIL", "GPU-a", [(t0, "90"), (t0 + 300, "90")]),
            ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "GPU-a", [(t0, "0.5"), (t0 + 300, "0.25")]),
            ("DCGM_FI_DEV_GPU_UTIL", "GPU-b", [(t0, "50"), (t0 + 300, "0")]),
        ]
    )
    f = tmp_path / "range.json"
    f.write_text(json.dumps(doc))
    result = ingest_utilization(store, [f])
    assert result.sources[0].format == "prometheus"
    rows = _rows(store)
    assert [(r["device_id"], r["utilization"], r["metric"]) for r in rows] == [
        ("GPU-a", 0.5, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
        ("GPU-a", 0.25, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
        ("GPU-b", 0.5, "DCGM_FI_DEV_GPU_UTIL"),
        ("GPU-b", 0.0, "DCGM_FI_DEV_GPU_UTIL"),
    ]
    assert {r["interval_s"] for r in rows} == {300.0}


def test_prometheus_shared_reference_shape(store: Store) -> None:
    if not (SHARED / "prometheus-range.json").exists():
        pytest.skip("shared reference formats not present")
    ingest_utilization(store, [SHARED / "prometheus-range.json"])
    assert [r["utilization"] for r in _rows(store)] == [0.91, 0.88, 0.0]


def test_prometheus_not_a_matrix(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "q.json"
    f.write_text(json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}))
    with pytest.raises(InputError, match=r"data\.resultType"):
        ingest_utilization(store, [f], fmt="prometheus")


# ------------------------------------------------------------------------------------------------- csv
def test_csv_percent_detected_and_iso_timestamps(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "t.csv"
    f.write_text(
        "timestamp,device_id,utilization,team,workload,resource_id\n"
        "2026-10-01T00:00:00Z,g0,50,research,pretrain,i-1\n"
        "2026-10-01T01:00:00+00:00,g0,100,research,pretrain,i-1\n"
    )
    result = ingest_utilization(store, [f])
    assert result.sources[0].util_scale == 100.0 and result.sources[0].util_scale_detected
    rows = _rows(store)
    assert [r["utilization"] for r in rows] == [0.5, 1.0]
    assert rows[0]["team"] == "research" and rows[0]["resource_id"] == "i-1" and rows[0]["workload"] == "pretrain"


def test_csv_fractions_detected(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "t.csv"
    f.write_text("timestamp,device_id,utilization\n2026-10-01T00:00:00Z,g0,0.5\n2026-10-01T00:01:00Z,g0,1\n")
    assert ingest_utilization(store, [f]).sources[0].util_scale == 1.0
    assert [r["utilization"] for r in _rows(store)] == [0.5, 1.0]


def test_csv_util_scale_flag_overrides_detection(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "t.csv"
    # an idle fleet in percent: every value <= 1 would be read as fractions without the flag
    f.write_text("timestamp,device_id,utilization\n2026-10-01T00:00:00Z,g0,1\n2026-10-01T00:01:00Z,g0,0\n")
    ingest_utilization(store, [f], util_scale=100)
    assert [r["utilization"] for r in _rows(store)] == [0.01, 0.0]


def test_csv_util_scale_one_with_percent_values_is_an_error(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "t.csv"
    f.write_text("timestamp,device_id,utilization\n2026-10-01T00:00:00Z,g0,55\n")
    with pytest.raises(InputError, match="`util_scale` 100"):
        ingest_utilization(store, [f], util_scale=1)


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [("1790000000", 1_790_000_000), ("1790000000000", 1_790_000_000), ("1790000000.5", 1_790_000_000.5)],
)
def test_csv_epoch_seconds_and_milliseconds(tmp_path: Path, store: Store, stamp: str, expected: float) -> None:
    f = tmp_path / "t.csv"
    f.write_text(f"ts,gpu_uuid,util\n{stamp},g0,0.3\n")
    ingest_utilization(store, [f])
    assert _rows(store)[0]["timestamp"].timestamp() == expected


def test_csv_mapping_flags(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "trace.csv"
    f.write_text(
        "when,gpu_serial,busy_pct,squad,job,instance,machine\n"
        "2026-10-01 00:00:00,S1,20,ml,train,i-9,m1\n"
        "2026-10-01 00:15:00,S1,40,ml,train,i-9,m1\n"
    )
    mapping = CsvMapping(
        timestamp_col="when",
        device_col="gpu_serial",
        util_col="busy_pct",
        team_col="squad",
        workload_col="job",
        resource_col="instance",
        host_col="machine",
    )
    ingest_utilization(store, [f], mapping=mapping)
    rows = _rows(store)
    assert [r["utilization"] for r in rows] == [0.2, 0.4]
    assert {(r["device_id"], r["team"], r["workload"], r["resource_id"], r["host"]) for r in rows} == {
        ("S1", "ml", "train", "i-9", "m1")
    }
    assert {r["interval_s"] for r in rows} == {900.0}


def test_csv_host_plus_gpu_index_makes_the_device(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "t.csv"
    f.write_text("timestamp,hostname,gpu,utilization\n2026-10-01T00:00:00Z,n1,0,0.1\n2026-10-01T00:00:00Z,n1,1,0.2\n")
    ingest_utilization(store, [f])
    assert [r["device_id"] for r in _rows(store)] == ["n1/gpu0", "n1/gpu1"]


def test_csv_dcgm_columns_prefer_prof(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "dcgm.csv"
    f.write_text("timestamp,UUID,DCGM_FI_DEV_GPU_UTIL,DCGM_FI_PROF_GR_ENGINE_ACTIVE\n2026-10-01T00:00:00Z,g0,99,0.4\n")
    result = ingest_utilization(store, [f])
    assert result.sources[0].metrics == {"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 1}
    assert _rows(store)[0]["utilization"] == 0.4


def test_csv_unknown_mapped_column_names_the_parameter(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "t.csv"
    f.write_text("timestamp,device_id,utilization\n2026-10-01T00:00:00Z,g0,0.5\n")
    with pytest.raises(InputError, match="util_col 'busy'"):
        ingest_utilization(store, [f], mapping=CsvMapping(util_col="busy"))


def test_csv_missing_util_column(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "t.csv"
    f.write_text("timestamp,device_id,foo\n2026-10-01T00:00:00Z,g0,0.5\n")
    with pytest.raises(InputError, match="`util_col`"):
        ingest_utilization(store, [f], fmt="csv")


def test_csv_bad_timestamp_names_row_and_column(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "t.csv"
    f.write_text("timestamp,device_id,utilization\n2026-10-01T00:00:00Z,g0,0.5\nyesterday,g0,0.5\n")
    with pytest.raises(InputError, match=r"row 2, column 'timestamp'.*yesterday"):
        ingest_utilization(store, [f])


def test_csv_bad_utilization_names_row(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "t.csv"
    f.write_text("timestamp,device_id,utilization\n2026-10-01T00:00:00Z,g0,0.5\n2026-10-01T00:01:00Z,g0,-3\n")
    with pytest.raises(InputError, match=r"row 2, column 'utilization'"):
        ingest_utilization(store, [f])
    f.write_text("timestamp,device_id,utilization\n2026-10-01T00:00:00Z,g0,busy\n")
    with pytest.raises(InputError, match=r"row 1, column 'utilization'"):
        ingest_utilization(store, [f])


def test_unknown_format_lists_valid_ones(tmp_path: Path, store: Store) -> None:
    f = tmp_path / "t.csv"
    f.write_text("timestamp,device_id,utilization\n2026-10-01T00:00:00Z,g0,0.5\n")
    with pytest.raises(InputError, match="dcgm, prometheus, csv"):
        ingest_utilization(store, [f], fmt="nvml")


def test_samples_ingest_all_three_formats(store: Store) -> None:
    samples = Path(__file__).resolve().parents[2] / "samples" / "utilization"
    result = ingest_utilization(store, [samples])
    formats = sorted(s.format for s in result.sources)
    assert formats == ["csv", "dcgm", "prometheus"]
    prom = next(s for s in result.sources if s.format == "prometheus")
    assert set(prom.metrics) == {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL"}
    table = store.read("utilization", columns=["utilization", "month"])
    assert table is not None and pc.max(table["utilization"]).as_py() <= 1.0
    assert set(table["month"].to_pylist()) == {"2026-10"}
