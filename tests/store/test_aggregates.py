"""Ingest aggregates: built from each committed detail file, in step with it through re-ingests and removals."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finops_cli import api
from finops_cli.store import Store
from finops_cli.store.engine import duckdb_sql, stage_aggregates
from finops_cli.store.queries import AGGREGATES
from finops_cli.store.schemas import AGGREGATE_SCHEMAS, dataset_schema
from tests.conftest import SAMPLES


def _sums(store: Store, sql: str) -> list[tuple]:
    return duckdb.connect().execute(sql.replace("ROOT", str(store.root))).fetchall()


def test_billing_hourly_adds_up_to_the_detail_lines(sample_ingested: Store) -> None:
    detail = _sums(
        sample_ingested,
        "SELECT BillingCurrency, count(*), round(sum(EffectiveCost), 2), round(sum(BilledCost), 2),"
        " round(sum(x_GpuHours), 3) FROM read_parquet('ROOT/billing/*/*/*.parquet') GROUP BY 1 ORDER BY 1",
    )
    hourly = _sums(
        sample_ingested,
        "SELECT BillingCurrency, sum(lines), round(sum(effective_cost), 2), round(sum(billed_cost), 2),"
        " round(sum(gpu_hours), 3) FROM read_parquet('ROOT/billing_hourly/*/*/*.parquet') GROUP BY 1 ORDER BY 1",
    )
    assert detail == hourly and detail[0][1] > 1000
    rows = _sums(sample_ingested, "SELECT count(*) FROM read_parquet('ROOT/billing_hourly/*/*/*.parquet')")[0][0]
    assert rows < detail[0][1]


def test_utilization_hourly_adds_up_to_the_samples(sample_ingested: Store) -> None:
    detail = _sums(
        sample_ingested,
        "SELECT count(*), round(sum(utilization * interval_s) / 3600, 6), round(sum(interval_s) / 3600, 6)"
        " FROM read_parquet('ROOT/utilization/*/*.parquet')",
    )
    hourly = _sums(
        sample_ingested,
        "SELECT sum(samples), round(sum(busy_gpu_hours), 6), round(sum(allocated_gpu_hours), 6)"
        " FROM read_parquet('ROOT/utilization_hourly/*/*.parquet')",
    )
    assert detail == hourly and detail[0][0] > 100_000


def test_a_reingest_replaces_and_a_removal_removes_the_aggregate(store: Store) -> None:
    api.ingest_billing([SAMPLES / "billing" / "focus-2026-10.csv"], store=store)
    files = store.files("billing_hourly")
    assert [f.name for f in files] == [f.name for f in store.files("billing")]
    before = pq.read_table(files[0])
    api.ingest_billing([SAMPLES / "billing" / "focus-2026-10.csv"], store=store)  # same key: replaced
    assert [f.name for f in store.files("billing_hourly")] == [f.name for f in files]
    assert pq.read_table(store.files("billing_hourly")[0]).equals(before)
    partitions = [
        {"provider": f.parent.parent.name.split("=")[1], "billing_period": f.parent.name.split("=")[1]}
        for f in store.files("billing")
    ]
    assert len(partitions) > 1  # the FOCUS sample bills several providers
    with store.transaction() as tx:
        tx.replace_partition("billing", partitions[0])
    assert len(store.files("billing")) == len(store.files("billing_hourly")) == len(partitions) - 1
    assert store.has_aggregate("billing")


def test_an_aborted_ingest_leaves_no_aggregate(store: Store) -> None:
    table = pa.table({"ChargePeriodStart": pa.array([0], pa.timestamp("us", tz="UTC")), "provider": ["aws"],
                      "billing_period": ["2026-10"], "EffectiveCost": [1.0]})  # fmt: skip
    with pytest.raises(RuntimeError), store.transaction(aggregates=stage_aggregates) as tx:
        tx.write_partitioned("billing", table, key="k")
        raise RuntimeError("killed")
    assert not store.has("billing") and not store.has("billing_hourly")
    with store.transaction(aggregates=stage_aggregates) as tx:
        tx.write_partitioned("billing", table, key="k")
    assert store.has_aggregate("billing")
    (row,) = pq.read_table(store.files("billing_hourly")[0]).to_pylist()
    assert row["lines"] == 1 and row["effective_cost"] == 1.0 and row["team"] is None


def test_an_aggregate_without_a_newer_column_is_not_used_for_it(sample_ingested: Store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Aggregates written before ``observed_until`` existed lack it: demand then reads the detail files."""
    import shutil

    from finops_cli.core.demand import Horizon
    from finops_cli.estate.demand_io import observe
    from finops_cli.schema.estate import Workload

    st = Store(tmp_path / "store")
    shutil.copytree(sample_ingested.root, st.root)
    w = Workload.model_validate(
        {"id": "w", "unit": "u", "demand": {"from_store": {"tag": "team", "value": "research"}}}
    )
    before = observe(st, w, Horizon.parse("2026-10"))
    assert st.has_aggregate("utilization_hourly", ("observed_until",))
    for path in st.files("utilization_hourly"):
        located = st.locate(path)
        pq.write_table(pq.read_table(located).drop_columns(["observed_until"]), located)
    assert st.has_aggregate("utilization") and not st.has_aggregate("utilization_hourly", ("observed_until",))
    after = observe(st, w, Horizon.parse("2026-10"))
    assert before is not None and after is not None
    assert (after.first_hour, after.end_hour) == (before.first_hour, before.end_hour)
    assert after.frame["gpu_hours"].sum() == pytest.approx(before.frame["gpu_hours"].sum())


@pytest.mark.parametrize("aggregate", sorted(AGGREGATES))
def test_the_declared_aggregate_schema_is_what_its_query_answers(aggregate: str) -> None:
    """A footer is checked against :data:`AGGREGATE_SCHEMAS` with no engine: it must be what the builder writes."""
    detail, query = AGGREGATES[aggregate]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register(detail, dataset_schema(detail).empty_table())
    answer = con.sql(duckdb_sql(query.sql)).arrow()  # a table (DuckDB 1) or a batch reader (DuckDB 2)
    assert answer.schema.equals(AGGREGATE_SCHEMAS[aggregate]), answer.schema
