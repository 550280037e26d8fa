"""The DuckDB engine: one connection per command, its settings from the environment (a bad value is exit 2, not a
traceback), UTC hours, deterministic per-file aggregates."""

from __future__ import annotations

from pathlib import Path

import pytest

from finops_cli.errors import InputError
from finops_cli.store import engine
from finops_cli.store.queries import SPOT_FEED_LATEST


@pytest.mark.parametrize(
    ("env", "value", "message"),
    [("FINOPS_DUCKDB_MEMORY", "lots", "FINOPS_DUCKDB_MEMORY"), ("FINOPS_DUCKDB_THREADS", "0", "threads >= 1")],
)
def test_a_bad_setting_is_a_clear_input_error(
    monkeypatch: pytest.MonkeyPatch, env: str, value: str, message: str
) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(InputError, match=message):
        engine.run_files(SPOT_FEED_LATEST, {})


def test_settings_reach_duckdb(monkeypatch: pytest.MonkeyPatch) -> None:
    from finops_cli.store.queries import Query

    monkeypatch.setenv("FINOPS_DUCKDB_MEMORY", "300MB")
    monkeypatch.setenv("FINOPS_DUCKDB_THREADS", "1")
    q = Query("settings", (), "SELECT current_setting('threads') AS t, current_setting('memory_limit') AS m")
    row = engine.run_files(q, {}).to_pylist()[0]
    assert row["t"] == 1 and row["m"].startswith(("286", "300"))


def test_a_command_engine_runs_every_query_on_one_connection_and_closing_removes_its_spill_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The command owns the engine: the queries of a ``using`` block run on one connection, each query's views
    private to it; leaving the block closes the connection and removes its spill folder."""
    import tempfile

    from finops_cli.store.queries import Query

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    q = Query("zone", (), "SELECT current_setting('TimeZone') AS tz")
    with engine.using(engine.DuckDBEngine()) as duck:
        assert engine.in_force() is duck and engine.current_engine() == "local"
        assert engine.run_files(q, {}).to_pylist() == [{"tz": "UTC"}]
        con = duck._con
        views = Query("views", (), "SELECT count(*) AS n FROM duckdb_views() WHERE NOT internal")
        assert engine.run_files(views, {}).to_pylist() == [{"n": 0}] and duck._con is con
        assert [p.name.startswith("finops-duckdb-") for p in tmp_path.iterdir()] == [True]
    assert engine.in_force() is None and duck._con is None
    assert list(tmp_path.iterdir()) == []
    assert engine.run_files(q, {}).to_pylist() == [{"tz": "UTC"}]  # none in force: a connection for the query
    assert list(tmp_path.iterdir()) == []


def test_every_cursor_reads_parquet_without_prefetching() -> None:
    from finops_cli.store.queries import Query

    q = Query("prefetch", (), "SELECT current_setting('disable_parquet_prefetching') AS off")
    assert engine.run_files(q, {}).to_pylist() == [{"off": True}]


def test_files_are_united_by_name_only_when_their_schemas_differ(tmp_path: Path) -> None:
    """Same-schema files are read as one schema; a file lacking a column, or with another column order, is
    united by name: the same answers either way."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from finops_cli.store.queries import Query

    files = {
        "a": pa.table({"x": [1], "y": ["p"]}),
        "same": pa.table({"x": [2], "y": ["q"]}),
        "reordered": pa.table({"y": ["r"], "x": [3], "z": [1.5]}),
        "lacking": pa.table({"x": [4]}),
    }
    partition = tmp_path / "provider=aws" / "month=2026-10"
    partition.mkdir(parents=True)
    paths = {}
    for name, table in files.items():
        paths[name] = str(partition / f"{name}.parquet")
        pq.write_table(table, paths[name])

    def differ(*names: str) -> bool:
        return engine._differ([pq.read_schema(paths[n]) for n in names])

    assert not differ("a", "same")
    assert differ("a", "reordered")
    assert differ("a", "lacking")
    q = Query("xy", ("spot_prices",), "SELECT x, y FROM spot_prices ORDER BY x")
    run = [paths["a"], paths["same"], paths["reordered"], paths["lacking"]]
    assert engine.run_files(q, {"spot_prices": run[:2]}).to_pylist() == [{"x": 1, "y": "p"}, {"x": 2, "y": "q"}]
    assert engine.run_files(q, {"spot_prices": run}).to_pylist() == [
        {"x": 1, "y": "p"}, {"x": 2, "y": "q"}, {"x": 3, "y": "r"}, {"x": 4, "y": None}
    ]  # fmt: skip


def test_system_allocator_inside_the_block_and_the_previous_pool_after() -> None:
    import pyarrow as pa

    before = pa.default_memory_pool()
    with engine.system_allocator():
        assert pa.default_memory_pool().backend_name == "system"
        assert pa.array(range(1000)).buffers()[1] is not None
    assert pa.default_memory_pool().backend_name == before.backend_name


def test_hours_are_cut_as_date_trunc_cuts_them_on_duckdb() -> None:
    """DuckDB runs ``date_trunc('hour', t)`` as epoch-microsecond arithmetic (ICU's calendar costs 25× more):
    the instants and type DuckDB's own date_trunc gives, before 1970 too, at an hour's last microsecond, null
    for null; every query that cuts hours is rewritten."""
    import duckdb

    from finops_cli.store import queries
    from finops_cli.store.queries import Query

    values = ["1900-03-01 10:30:00", "1969-12-31 22:00:00", "1969-12-31 23:59:59.999999", "1970-01-01 00:00:00",
              "2026-10-01 10:59:59.999999", "2026-10-01 11:00:00", "2199-12-31 23:59:59.999999"]  # fmt: skip
    rows = ", ".join(f"(TIMESTAMPTZ '{v}+00')" for v in values) + ", (NULL)"
    sql = f"""SELECT date_trunc('hour', "timestamp") AS hour, typeof(date_trunc('hour', "timestamp")) AS type
              FROM (VALUES {rows}) v("timestamp")"""
    assert "date_trunc" not in engine.duckdb_sql(sql)
    got = engine.run_files(Query("hours", (), sql), {}).to_pylist()
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    assert got == con.sql(sql).to_arrow_table().to_pylist()
    assert got[2]["hour"].isoformat() == "1969-12-31T23:00:00+00:00" and got[-1]["hour"] is None
    portable = [q.sql for q in vars(queries).values() if isinstance(q, Query) and "date_trunc('hour'" in q.sql]
    assert len(portable) >= 4 and all("date_trunc" not in engine.duckdb_sql(text) for text in portable)


def test_per_file_aggregates_sum_on_one_thread_in_the_file_order(tmp_path: Path) -> None:
    """Two DuckDB threads add a file's row groups in whichever order they finish (the same 5 M-line file gave
    three different billing_hourly files): the per-file aggregates run on one thread, and the setting comes back."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from finops_cli.store.queries import Query

    rng = np.random.default_rng(7)
    n = 300_000
    table = pa.table({"g": rng.integers(0, 3, n), "x": rng.random(n) * 10.0 ** rng.integers(-6, 9, n)})
    path = tmp_path / "utilization" / "month=2026-10" / "detail.parquet"  # a store file's place
    path.parent.mkdir(parents=True)
    pq.write_table(table, path, row_group_size=10_000)  # 30 row groups: work for every thread there is
    sql = "SELECT g, sum(x) AS s, current_setting('threads') AS threads FROM utilization GROUP BY g ORDER BY g"
    query = Query("sums", ("utilization",), sql)
    threads = Query("threads", (), "SELECT current_setting('threads') AS t")
    with engine.using(engine.DuckDBEngine()):
        before = engine.run_files(threads, {}).to_pylist()
        first = engine.run_per_file(query, "utilization", [path])[0]
        assert set(first["threads"].to_pylist()) == {1}
        for _ in range(4):
            assert engine.run_per_file(query, "utilization", [path])[0].equals(first)
        assert engine.run_files(threads, {}).to_pylist() == before


def test_every_query_is_on_utc_without_prefetching_or_progress_bar() -> None:
    """DuckDB's own defaults are the machine's zone, prefetching on, and (in an interactive Python) a progress bar
    drawn on stderr, inside our output."""
    from finops_cli.store.queries import Query

    sql = (
        "SELECT current_setting('TimeZone') AS tz, current_setting('disable_parquet_prefetching') AS off, "
        "current_setting('enable_progress_bar') AS bar"
    )
    with engine.using(engine.DuckDBEngine()):
        for _ in range(2):
            assert engine.run_files(Query("s", (), sql), {}).to_pylist() == [{"tz": "UTC", "off": True, "bar": False}]


def test_a_views_columns_are_read_from_the_footers_as_describe_answers(tmp_path: Path) -> None:
    """The view learns which canonical columns the files lack from the footers the store's check read, not from
    DuckDB's ``DESCRIBE`` (1.3 ms a view): the same columns, with older files (lacking the newest columns), Hive
    partition columns (every ``key=value`` directory, a parent's too) and one file alone; the lacking columns are
    NULL in the view."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    from finops_cli.schema.billing import BILLING_SCHEMA
    from finops_cli.store.queries import Query
    from finops_cli.store.store import Store

    lacking = BILLING_SCHEMA.names[-1]  # x_SourceRow

    def lines(schema: pa.Schema) -> pa.Table:
        values = {lacking: pa.array([1, 2], pa.int64())}
        return pa.table([values.get(f.name, pa.nulls(2, f.type)) for f in schema], schema=schema)

    old = pa.schema(list(BILLING_SCHEMA)[:-3])  # written before the last three columns existed
    store = Store(tmp_path / "team=gpu" / "store")
    written = {
        ("aws", "2026-09", "old"): old,
        ("aws", "2026-10", "new"): BILLING_SCHEMA,
        ("gcp", "2026-10", "reordered"): pa.schema(list(BILLING_SCHEMA)[::-1]),
    }
    for (provider, period, name), schema in written.items():
        directory = store.root / "billing" / f"provider={provider}" / f"billing_period={period}"
        directory.mkdir(parents=True, exist_ok=True)
        pq.write_table(lines(schema), directory / f"{name}.parquet")
    checked = store.checked_schemas("billing")
    located = [store.locate(p) for p in checked]
    con = duckdb.connect()
    for paths in (located, located[:1], located[1:2]):
        footers = [checked[Path(p)] for p in paths]
        union = "union_by_name = true, " if engine._differ(footers) else ""
        listed = ", ".join(engine._literal(p) for p in paths)
        source = f"read_parquet([{listed}], hive_partitioning = true, {union}hive_types = {{'provider': 'VARCHAR'}})"
        described = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
        assert engine._view_columns(paths, footers) == described
        assert {"team", "provider", "billing_period"} <= described
    q = Query("lacking", ("billing",), f'SELECT billing_period, count("{lacking}") AS n, count(*) AS lines '
              "FROM billing GROUP BY billing_period ORDER BY billing_period")  # fmt: skip
    assert engine.run(store, q).to_pylist() == [
        {"billing_period": "2026-09", "n": 0, "lines": 2}, {"billing_period": "2026-10", "n": 4, "lines": 4}
    ]  # fmt: skip
    con = duckdb.connect()  # the old file alone: its view has the canonical columns it lacks, NULL
    engine.create_view(con, "billing", located[:1])
    assert con.execute(f'SELECT count(*), count("{lacking}") FROM billing').fetchone() == (2, 0)
