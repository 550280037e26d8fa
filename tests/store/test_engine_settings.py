"""DuckDB's memory and thread settings come from the environment; a bad value is exit 2, not a traceback."""

from __future__ import annotations

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


def test_queries_share_one_database_and_each_sees_only_its_own_views(monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a DuckDB database costs ~40 ms: one per process, a cursor per query, views private to it."""
    from finops_cli.store.queries import Query

    q = Query("zone", (), "SELECT current_setting('TimeZone') AS tz")
    assert engine.run_files(q, {}).to_pylist() == [{"tz": "UTC"}]
    first = engine._SHARED["db"]
    with engine.connect() as a, engine.connect() as b:
        a.execute("CREATE TEMP VIEW billing AS SELECT 1 AS x")
        b.execute("CREATE TEMP VIEW billing AS SELECT 2 AS x")  # no clash with a's
        assert a.sql("SELECT x FROM billing").fetchall() == [(1,)]
        assert b.sql("SELECT x FROM billing").fetchall() == [(2,)]
    with engine.connect() as c:
        assert c.sql("SELECT count(*) FROM duckdb_views() WHERE view_name = 'billing'").fetchall() == [(0,)]
    assert engine.run_files(q, {}).to_pylist() == [{"tz": "UTC"}] and engine._SHARED["db"] is first
    monkeypatch.setenv("FINOPS_DUCKDB_MEMORY", "300MB")  # other settings: another database
    engine.run_files(q, {})
    assert engine._SHARED["db"] is not first


def test_release_memory_closes_the_idle_database_and_the_next_query_opens_one() -> None:
    """After a query over a month's lines the commands hand its working memory back; a cursor still open
    keeps the database (closing it under a running query would break that query)."""
    from finops_cli.store.queries import Query

    q = Query("one", (), "SELECT 1 AS x")
    engine.run_files(q, {})
    first = engine._SHARED["db"]
    with engine.connect() as con:
        engine.release_memory()
        assert engine._SHARED["db"] is first and con.sql("SELECT 2").fetchall() == [(2,)]
    engine.release_memory()
    assert "db" not in engine._SHARED
    assert engine.run_files(q, {}).to_pylist() == [{"x": 1}] and engine._SHARED["db"] is not first
