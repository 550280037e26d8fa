"""The store's SQL on Spark SQL: every query of queries.py, translated by sqlglot, answers as DuckDB does;
``finops waste --engine spark`` prints the report the local engine prints; a missing pyspark or Java is one
line and exit 2."""

from __future__ import annotations

import builtins
import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from finops_cli.cli.app import app
from finops_cli.errors import InputError
from finops_cli.spark.sql import SparkEngine, to_spark_sql
from finops_cli.store import Store, engine
from finops_cli.store.queries import QUERIES
from tests.conftest import SAMPLES
from tests.spark.analyses import ANALYSES, assert_same_json, ingest_samples, timeless

runner = CliRunner()
#: one worker runs every Spark test, so the suite starts one JVM (see conftest.py)
pytestmark = pytest.mark.xdist_group("spark")

PARAMS = {
    "month": "2026-10",
    "first_period": "2026-10",
    "first_month": "2026-10",
    "last_month": "2026-10",
    "start": datetime(2026, 10, 1, tzinfo=UTC),
    "end": datetime(2026, 11, 1, tzinfo=UTC),
    "tag_path": engine.json_path("team"),  # as the commands pass it: $."team"
    "value": "research",
}
SLOTS = {
    "match_columns": ', "SubAccountId"',
    "tag_column": "team",
    "groups": '"x_InstanceType" AS "g0", json_extract_string(Tags, $tag_path) AS "g1", ',
    "conditions": "billing_period = $month",
    "column": '"team"',
    "months": "$month",
}


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    root = tmp_path_factory.mktemp("sql") / "store"
    ingest_samples(root)
    return Store(root)


def _rows(table: pa.Table) -> list[tuple]:
    def norm(v: object) -> object:
        return round(v, 6) if isinstance(v, float) and math.isfinite(v) else v

    return sorted((tuple(norm(v) for v in r.values()) for r in table.to_pylist()), key=repr)


@pytest.mark.parametrize("store_kind", ["directory", "bucket"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_every_query_answers_the_same_on_spark(
    spark: object, request: pytest.FixtureRequest, store_kind: str, name: str
) -> None:
    """Over a directory (Spark's Parquet reader) and over a bucket store (tasks reading the committed objects)."""
    store = request.getfixturevalue("sample_store" if store_kind == "directory" else "bucket_samples")
    query = QUERIES[name]
    slots = {k: v for k, v in SLOTS.items() if "{" + k + "}" in query.sql}
    duck = engine.run(store, query, PARAMS, **slots)
    with engine.using(SparkEngine()):
        on_spark = engine.run(store, query, PARAMS, **slots)
    assert duck is not None and on_spark is not None
    assert duck.num_rows > 0, name  # a comparison of two empty answers proves nothing
    assert on_spark.column_names == duck.column_names
    assert _rows(on_spark) == _rows(duck)


def test_waste_cli_same_report_on_both_engines(spark: object, sample_store: Store) -> None:
    args = ["waste", "--store", str(sample_store.root), "--format", "json", "--month", "2026-10"]
    local = runner.invoke(app, args)
    on_spark = runner.invoke(app, [*args, "--engine", "spark"])
    assert local.exit_code == 0 and on_spark.exit_code == 0, on_spark.output
    a, b = json.loads(local.stdout), json.loads(on_spark.stdout)
    assert a["groups"] and a["totals"]["idle_cost"] > 0
    assert_same_json(a, b)


def test_costs_waste_and_the_plans_baseline_on_spark_answer_as_duckdb_over_a_bucket_store(
    spark: object, bucket_samples: Store, analyses_on_duckdb: dict[str, object]
) -> None:
    """``local[2]``: the tasks read the committed objects with pyarrow.fs (the cluster: test_spark_cluster.py)."""
    for name, args in ANALYSES.items():
        result = runner.invoke(app, [*args, "--store", bucket_samples.location, "--engine", "spark"])
        assert result.exit_code == 0, result.output
        assert_same_json(analyses_on_duckdb[name], timeless(json.loads(result.stdout)), name)


def test_parameters_are_bound_as_literals_never_as_sql() -> None:
    sql = to_spark_sql(QUERIES["demand_from_billing"].sql, {**PARAMS, "value": "x' OR '1'='1"})
    assert "GET_JSON_OBJECT" in sql and "'x\\' OR \\'1\\'=\\'1'" in sql
    assert "CAST('2026-10-01 00:00:00' AS TIMESTAMP)" in sql
    with pytest.raises(ValueError, match="month"):
        to_spark_sql(QUERIES["waste_device_usage"].sql, {})


def test_json_paths_and_json_valid_as_spark_reads_them() -> None:
    """Spark's GET_JSON_OBJECT answers NULL for a quoted key (``$."team"``) and has no JSON_VALID."""
    sql = "SELECT CASE WHEN json_valid(Tags) THEN json_extract_string(Tags, $p) END FROM billing"
    spark_sql = to_spark_sql(sql, {"p": engine.json_path("kubernetes.io/team")})
    assert "GET_JSON_OBJECT(Tags, '$[\\'kubernetes.io/team\\']')" in spark_sql
    assert "(NOT GET_JSON_OBJECT(Tags, '$') IS NULL)" in spark_sql and "JSON_VALID" not in spark_sql.upper()
    with pytest.raises(InputError, match="which Spark SQL cannot read"):
        to_spark_sql(sql, {"p": engine.json_path("it's")})


def test_without_pyspark_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real_import = builtins.__import__

    def no_pyspark(name: str, *args: object, **kwargs: object) -> object:
        if name == "pyspark" or name.startswith("pyspark."):
            raise ImportError("No module named 'pyspark'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyspark)
    result = runner.invoke(app, ["ingest", "billing", str(SAMPLES / "billing"), "--engine", "spark"])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0
    assert "pip install 'gpu-fleet-finops[spark]'" in result.output
    assert not (tmp_path / "default-store").exists()  # refused before the store was touched


def test_without_java_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark.sql import SparkSession

    from finops_cli.spark import session

    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(session, "_java_available", lambda: False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    with pytest.raises(InputError, match="needs Java 17 or later"):
        session.get_session()
