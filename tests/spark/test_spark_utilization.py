"""``ingest utilization --engine spark`` gives the store the local engine gives: each source is one Spark task
through the pipeline's own ``ingest_source``; same files, rows, manifest and hourly aggregates; the same
refusals (a sample counted twice), with the store left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from finops_cli import api
from finops_cli.cli.app import app
from finops_cli.errors import InputError
from finops_cli.store import Store
from tests.conftest import SAMPLES

runner = CliRunner()
#: one worker runs every Spark test, so the suite starts one JVM (see conftest.py)
pytestmark = pytest.mark.xdist_group("spark")


def write_traces(folder: Path, sources: int = 3, devices: int = 6, samples: int = 400, seed: int = 3) -> list[Path]:
    """Generic CSV traces, one device set per source, across a month boundary, with a cadence change, a gap,
    a duplicate sample, percent values, teams and a device seen once (messier than the samples)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    start = np.datetime64("2026-10-31T20:00:00", "s")
    paths = []
    for s in range(sources):
        rows: dict[str, list] = {"timestamp": [], "gpu_uuid": [], "gpu_util": [], "team": [], "host": []}
        for d in range(devices):
            cadence = 30 if d % 2 else 60
            ts = start + np.arange(samples) * cadence
            ts = np.delete(ts, slice(100, 130)) if d == 1 else ts  # a gap
            ts = np.append(ts, ts[-1]) if d == 2 else ts  # a duplicate sample
            n = 1 if d == devices - 1 else len(ts)  # a device seen once
            rows["timestamp"] += [str(t) + "Z" for t in ts[:n]]
            rows["gpu_uuid"] += [f"GPU-{s}-{d:03d}"] * n
            rows["gpu_util"] += rng.uniform(0, 100, n).round(1).tolist()
            rows["team"] += [("research", "infra", None)[d % 3]] * n
            rows["host"] += [f"node-{s}-{d // 4}"] * n
        order = np.argsort(np.array(rows["timestamp"]), kind="stable")  # devices interleaved, as scraped
        table = pa.table({k: [v[i] for i in order] for k, v in rows.items()})
        path = folder / f"trace-{s}.csv"
        pacsv.write_csv(table, path)
        paths.append(path)
    return paths


def _files(root: Path, dataset: str) -> dict[str, Path]:
    base = root / dataset
    return {str(p.relative_to(base)): p for p in sorted(base.rglob("*.parquet"))}


def _manifest(root: Path) -> list[dict]:
    entries = Store(root).manifest()
    return sorted(({k: v for k, v in e.items() if k not in ("ingested_at", "txid")} for e in entries), key=str)


def assert_same_utilization(local: Path, spark: Path) -> None:
    a, b = _files(local, "utilization"), _files(spark, "utilization")
    assert a and list(a) == list(b)
    for rel in a:
        assert pq.read_table(a[rel]).equals(pq.read_table(b[rel])), rel  # row for row, in the same order
    ha, hb = _files(local, "utilization_hourly"), _files(spark, "utilization_hourly")
    assert list(ha) == list(hb) == list(a)
    for rel in ha:
        ta, tb = pq.read_table(ha[rel]).to_pylist(), pq.read_table(hb[rel]).to_pylist()
        key = lambda r: [str(v) for v in r.values() if not isinstance(v, float)]  # noqa: E731
        ta, tb = sorted(ta, key=key), sorted(tb, key=key)
        assert len(ta) == len(tb) > 0
        for x, y in zip(ta, tb, strict=True):
            assert x.keys() == y.keys()
            for k in x:
                assert y[k] == (pytest.approx(x[k]) if isinstance(x[k], float) else x[k]), (rel, k)
    assert _manifest(local) == _manifest(spark)


def test_samples_and_generated_traces_same_store_on_both_engines(spark: object, tmp_path: Path) -> None:
    traces = write_traces(tmp_path / "traces")
    sources = [SAMPLES / "utilization" / "dcgm", SAMPLES / "utilization" / "prometheus-range.json.gz", *traces]
    local = api.ingest_utilization(sources, store=tmp_path / "local")
    on_spark = api.ingest_utilization(sources, store=tmp_path / "spark", engine="spark")
    assert_same_utilization(tmp_path / "local", tmp_path / "spark")
    assert on_spark.to_dict() == local.to_dict()
    assert len(on_spark.sources) == 5 and on_spark.rows_written == local.rows_written > 0
    months = {m for s in on_spark.sources for m in s.months}
    assert months == {"2026-10", "2026-11"} or "2026-11" in months  # the generated traces cross into November


def test_a_sample_counted_twice_is_refused_the_same_way_and_nothing_changes(spark: object, tmp_path: Path) -> None:
    traces = write_traces(tmp_path / "traces", sources=2)
    root = tmp_path / "store"
    api.ingest_utilization(traces[:1], store=root, engine="spark")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != ".lock"}
    # the same trace with another option is another key but the same samples
    with pytest.raises(InputError) as local_err:
        api.ingest_utilization(traces, store=root, util_scale=100)
    with pytest.raises(InputError) as spark_err:
        api.ingest_utilization(traces, store=root, util_scale=100, engine="spark")
    assert str(spark_err.value) == str(local_err.value) and "counted twice" in str(spark_err.value)
    after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != ".lock"}
    assert after == before
    # a bad source fails its task with the local engine's one line
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp,gpu_uuid,gpu_util\n2026-10-01T00:00:00Z,GPU-x,250\n2026-10-01T00:01:00Z,GPU-x,0.5\n")
    with pytest.raises(InputError) as local_bad:
        api.ingest_utilization([bad], store=root, util_scale=1)
    with pytest.raises(InputError) as spark_bad:
        api.ingest_utilization([bad], store=root, util_scale=1, engine="spark")
    assert str(spark_bad.value) == str(local_bad.value) and "\n" not in str(spark_bad.value)
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != ".lock"} == before


def test_cli_ingest_utilization_engine_spark(spark: object, tmp_path: Path) -> None:
    traces = write_traces(tmp_path / "traces", sources=2, samples=50)
    args = ["ingest", "utilization", str(tmp_path / "traces"), "--store", str(tmp_path / "s"), "--format", "json"]
    result = runner.invoke(app, [*args, "--engine", "spark"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [Path(s["source"]).name for s in out["sources"]] == [p.name for p in traces]
    assert out["rows_written"] == sum(s["samples"] - s["duplicates_dropped"] for s in out["sources"])
