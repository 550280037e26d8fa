"""``--engine spark`` gives the store the local engine gives: same files, same rows in the same order, same
manifest, same money to the cent; and the same refusals, with the store left as it was."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.errors import InputError
from finops_cli.ingest.billing import ingest_billing
from finops_cli.ingest.billing.money import exact_sum
from finops_cli.spark.billing import SparkStager
from finops_cli.store import Store
from tests.conftest import SAMPLES
from tests.spark.cur_parts import write_parts
from tests.store_files import forget

runner = CliRunner()
#: one worker runs every Spark test, so the suite starts one JVM (see conftest.py)
pytestmark = pytest.mark.xdist_group("spark")


def _files(root: Path, dataset: str) -> dict[str, Path]:
    base = root / dataset
    return {str(p.relative_to(base)): p for p in sorted(base.rglob("*.parquet"))}


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([(c, "ascending") for c in table.column_names if not pa.types.is_floating(table[c].type)])


def assert_same_store(local: Path, spark: Path) -> None:
    """Billing files: same names, schemas and rows in the same order; aggregates: the same rows."""
    a, b = _files(local, "billing"), _files(spark, "billing")
    assert a and list(a) == list(b)
    for rel in a:
        ta, tb = pq.read_table(a[rel]), pq.read_table(b[rel])
        assert ta.schema == tb.schema, rel
        assert ta.equals(tb), rel  # row for row, in the same order
    ha, hb = _files(local, "billing_hourly"), _files(spark, "billing_hourly")
    assert list(ha) == list(hb) == list(a)
    for rel in ha:
        ta, tb = _sorted(pq.read_table(ha[rel])), _sorted(pq.read_table(hb[rel]))
        assert ta.schema == tb.schema, rel
        assert ta.drop_columns(["gpu_hours", "consumed_gpu_hours", "billed_cost", "effective_cost"]).equals(
            tb.drop_columns(["gpu_hours", "consumed_gpu_hours", "billed_cost", "effective_cost"])
        )
        for c in ("gpu_hours", "billed_cost", "effective_cost"):  # sums in another order: equal to float rounding
            assert pc.max(pc.abs(pc.subtract(ta[c], tb[c]))).as_py() < 1e-6, (rel, c)

    def manifest(root: Path) -> list[dict]:
        entries = Store(root).manifest()
        return sorted(
            ({k: v for k, v in e.items() if k not in ("ingested_at", "txid", "billed_cost")} for e in entries),
            key=lambda e: e["source_key"],
        )

    assert manifest(local) == manifest(spark)


def money(root: Path) -> dict[str, int]:
    """BilledCost per currency in the store, exactly (nano-units)."""
    table = Store(root).read("billing", columns=["BillingCurrency", "BilledCost"])
    return {
        c: exact_sum(pc.filter(table["BilledCost"], pc.equal(table["BillingCurrency"], c)))
        for c in pc.unique(table["BillingCurrency"]).to_pylist()
    }


def test_sample_exports_same_store_on_both_engines(spark: object, tmp_path: Path) -> None:
    local = ingest_billing([SAMPLES / "billing"], store=Store(tmp_path / "local"))
    on_spark = ingest_billing([SAMPLES / "billing"], store=Store(tmp_path / "spark"), stager=SparkStager())
    assert_same_store(tmp_path / "local", tmp_path / "spark")
    assert money(tmp_path / "local") == money(tmp_path / "spark")
    assert on_spark.conservation == local.conservation  # exact sums: the same to the nano-unit
    assert [(f.path, f.format, f.rows, f.azure_export) for f in on_spark.files] == [
        (f.path, f.format, f.rows, f.azure_export) for f in local.files
    ]
    for a, b in zip(local.cost, on_spark.cost, strict=True):
        assert (a["provider"], a["currency"], a["rows"]) == (b["provider"], b["currency"], b["rows"])
        assert a["billed_cost"] == pytest.approx(b["billed_cost"], abs=0.005)
    assert [(g["accelerator"], g["pricing_category"]) for g in on_spark.gpu_hours] == [
        (g["accelerator"], g["pricing_category"]) for g in local.gpu_hours
    ]
    assert [g["gpu_hours"] for g in on_spark.gpu_hours] == pytest.approx([g["gpu_hours"] for g in local.gpu_hours])
    assert on_spark.warnings == local.warnings


def test_generated_multi_file_cur_same_store_and_totals_to_the_cent(spark: object, tmp_path: Path) -> None:
    parts = write_parts(tmp_path / "cur", rows_per_part=300)
    local = ingest_billing(parts, "aws-cur", Store(tmp_path / "local"))
    on_spark = ingest_billing(parts, "aws-cur", Store(tmp_path / "spark"), stager=SparkStager())
    assert_same_store(tmp_path / "local", tmp_path / "spark")
    assert set(money(tmp_path / "spark")) == {"USD", "EUR"}
    assert money(tmp_path / "local") == money(tmp_path / "spark")
    assert on_spark.rows == local.rows == 1_800  # 3 exports × 2 parts × 300 lines
    assert on_spark.conservation == local.conservation
    assert on_spark.warnings == local.warnings

    # re-ingesting on the other engine replaces, never duplicates (same keys, same files)
    ingest_billing(parts, "aws-cur", Store(tmp_path / "local"), stager=SparkStager())
    assert_same_store(tmp_path / "local", tmp_path / "spark")


def test_a_bad_file_is_one_line_and_the_store_is_left_as_it_was(spark: object, tmp_path: Path) -> None:
    parts = write_parts(tmp_path / "cur", rows_per_part=200, parts_per_export=1)
    store = Store(tmp_path / "store")
    ingest_billing(parts[:1], "aws-cur", store, stager=SparkStager())
    before = {p: p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file() and p.name != ".lock"}
    bad = tmp_path / "bad.csv"
    with parts[1].open(newline="") as fh:
        rows = list(csv.reader(fh))
    rows[3][rows[0].index("lineItem/UnblendedCost")] = "12,5"  # a decimal comma
    with bad.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    with pytest.raises(InputError) as local_err:
        ingest_billing([parts[2], bad], "aws-cur", store)
    with pytest.raises(InputError) as spark_err:
        ingest_billing([parts[2], bad], "aws-cur", store, stager=SparkStager())
    assert str(spark_err.value) == str(local_err.value)
    assert "bad.csv" in str(spark_err.value) and "\n" not in str(spark_err.value)
    after = {p: p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file() and p.name != ".lock"}
    assert after == before


def test_cli_engine_spark_and_summary(spark: object, tmp_path: Path) -> None:
    parts = write_parts(tmp_path / "cur", rows_per_part=300, parts_per_export=2)
    store = tmp_path / "store"
    args = ["ingest", "billing", str(tmp_path / "cur"), "--store", str(store), "--format", "json"]
    result = runner.invoke(app, [*args, "--engine", "spark"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["rows"] == 6 * 300 and len(summary["files"]) == len(parts)
    assert {c["currency"] for c in summary["conservation"]} == {"USD", "EUR"}
    assert all(abs(c["difference"]) < 0.005 for c in summary["conservation"])


def test_store_aggregate_rebuilt_on_spark_matches_duckdb(spark: object, tmp_path: Path) -> None:
    shutil.copytree(SAMPLES / "billing", tmp_path / "in")
    root = tmp_path / "store"
    ingest_billing([tmp_path / "in"], store=Store(root))
    shutil.copytree(root, tmp_path / "duckdb")
    forget(root, "billing_hourly")  # a store written before the aggregates existed
    result = runner.invoke(app, ["store", "aggregate", "--engine", "spark", "--store", str(root), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["built"]["billing"] == len(_files(root, "billing"))
    assert_same_store(tmp_path / "duckdb", root)
